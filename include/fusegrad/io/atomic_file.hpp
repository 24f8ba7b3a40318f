#pragma once
/// \file fg::io::write_atomically: a file replaced in one step (Note [atomic file]), for
/// checkpoints and their index files.

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "../core/error.hpp"

namespace fusegrad::io {

// Note [atomic file]: write_atomically writes the bytes to a new temporary file in the target's
// directory, ".<name>.tmp-<pid>-<n>", fsyncs it, renames it onto the target (rename(2) replaces
// a file atomically) and fsyncs the directory, so that a crash or a failure at any moment leaves
// under the name either the old file or the complete new one, and after it returns the new
// file is on disk. On a failure (a full disk, a quota, permissions) the temporary file is
// removed and the old file is untouched. Only a process killed mid-write leaves a temporary
// file behind.

/// Replaces (or makes) the file `path` with `bytes`, atomically (Note [atomic file]). The
/// directory must exist. `check`, when given, is called with the temporary file's path once it
/// is on disk, before the rename; what it throws abandons the write. A failure throws
/// value_error "<op>: '<path>': <what>: <the system's reason>" and leaves the file under `path`
/// as it was.
inline void write_atomically(const std::string& path, std::string_view bytes,
                             std::string_view op = "fg::io::write_atomically",
                             const std::function<void(const std::string&)>& check = {}) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  FG_CHECK(target.has_filename(), value_error, op, ": '", path, "': the path names a directory, not a file");
  FG_CHECK(fs::is_directory(dir, ec), value_error, op, ": '", path, "': the directory '", dir.string(),
           "' does not exist");
  static std::atomic<unsigned long> serial{0};
  const fs::path tmp =
      dir / ("." + target.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(serial++));
  int fd = -1;
  const auto fail = [&](const char* what, int e) {
    if (fd >= 0) ::close(fd);
    fs::remove(tmp, ec);
    FG_CHECK(false, value_error, op, ": '", path, "': ", what, ": ", std::strerror(e));
  };
  fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create a temporary file beside it", errno);
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot write it (disk full?)", n < 0 ? errno : ENOSPC);
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) fail("cannot write it to disk", errno);
  const int closed = ::close(fd);
  fd = -1;
  if (closed != 0) fail("cannot write it to disk", errno);
  if (check) {
    try {
      check(tmp.string());
    } catch (...) {
      fs::remove(tmp, ec);
      throw;
    }
  }
  if (std::rename(tmp.c_str(), target.c_str()) != 0) fail("cannot rename the temporary file onto it", errno);
  if (const int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); d >= 0) {
    const int r = ::fsync(d), e = errno;
    ::close(d);
    // The new file is in place; a directory the file system cannot sync passes.
    FG_CHECK(r == 0 || e == EINVAL || e == ENOTSUP, value_error, op, ": '", path,
             "': written, but its directory cannot be synced: ", std::strerror(e));
  }
}
}  // namespace fusegrad::io
