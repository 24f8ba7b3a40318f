#pragma once
// The fuzz input of the targets in tests/fuzz, read a byte at a time.
#include <cstddef>
#include <cstdint>

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
}  // namespace fuzz
