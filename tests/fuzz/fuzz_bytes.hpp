#pragma once
// The fuzz input of the targets in tests/fuzz, read a byte at a time, and the folder of their
// scratch files.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace fuzz {
/// Reads the fuzz input a byte at a time; zeros once it is used up.
struct byte_reader {
  const std::uint8_t* p;
  std::size_t n;
  std::uint8_t u8() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
};

/// The folder of a target's scratch files: $TMPDIR, else /tmp. A run on a machine whose /tmp is
/// a disk goes faster with TMPDIR=/dev/shm (the targets that read files write one per input).
inline std::string scratch_dir() {
  const char* dir = std::getenv("TMPDIR");
  return dir != nullptr && *dir != '\0' ? dir : "/tmp";
}
}  // namespace fuzz
