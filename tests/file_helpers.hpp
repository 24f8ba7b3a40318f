#pragma once
// Helpers shared by the test files that write files: a scratch directory removed at the end, and
// a file's bytes read and written whole.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

namespace fg_test {
/// A fresh directory under the temporary directory, named by the test file and the test
/// (`<prefix>_<name>_<pid>`), removed at the end.
struct scratch_dir {
  std::filesystem::path path;
  scratch_dir(const std::string& prefix, const std::string& name)
      : path(std::filesystem::temp_directory_path() / (prefix + "_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  ~scratch_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string operator/(const std::string& f) const { return (path / f).string(); }
  /// The names in the directory, sorted (hidden temporary files included).
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(path)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
};

/// The bytes of the file p.
inline std::string read_bytes(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
/// Replaces the file p's contents with bytes.
inline void write_bytes(const std::string& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}
}  // namespace fg_test
