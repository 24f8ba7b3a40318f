#pragma once
/// \file fg::io's TFRecord files: CRC32C checksums (Note [masked crc]), the framing of records
/// (Note [tfrecord framing]), a reader that checks every record (Note [tfrecord reading]) and a
/// file that records are appended to. TensorBoard's event files are TFRecord files of Event
/// messages (io/events.hpp). Every failure throws fg::value_error naming the function, the file
/// and, when reading, the offset.

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../core/error.hpp"

namespace fusegrad::io {

// ---------------------------------------------------------------------------------------------
// CRC32C

namespace tfrecord_impl {
/// The byte-at-a-time table of CRC32C: the Castagnoli polynomial 0x1EDC6F41, bit-reflected
/// (0x82F63B78), as iSCSI (RFC 3720, appendix B.4) and TFRecord use it.
constexpr std::array<std::uint32_t, 256> crc32c_table() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}
inline constexpr std::array<std::uint32_t, 256> crc32c_lookup = crc32c_table();
}  // namespace tfrecord_impl

/// CRC32C (Castagnoli) of `bytes`: the register starts at all ones and is inverted at the end,
/// so crc32c("123456789") == 0xE3069283. `crc` continues a checksum over more bytes.
inline std::uint32_t crc32c(std::string_view bytes, std::uint32_t crc = 0) {
  std::uint32_t c = ~crc;
  for (const char ch : bytes) c = tfrecord_impl::crc32c_lookup[(c ^ static_cast<unsigned char>(ch)) & 0xFFu] ^ (c >> 8);
  return ~c;
}

// Note [masked crc]: TFRecord stores a CRC "masked": rotated right by 15 bits and then offset by
// the constant 0xa282ead8 (mod 2^32). A CRC computed over bytes that themselves hold a CRC is
// degenerate (the CRC of data followed by its own CRC is a constant), so a format that embeds
// checksummed records in checksummed streams masks them; the mask is undone before comparing.

/// The masked form of a CRC (Note [masked crc]).
constexpr std::uint32_t mask_crc(std::uint32_t crc) noexcept {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
/// The CRC a masked one came from: mask_crc's inverse.
constexpr std::uint32_t unmask_crc(std::uint32_t masked) noexcept {
  const std::uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}
/// mask_crc(crc32c(bytes)): what TFRecord stores.
inline std::uint32_t masked_crc32c(std::string_view bytes) { return mask_crc(crc32c(bytes)); }

// ---------------------------------------------------------------------------------------------
// TFRecord framing

// Note [tfrecord framing]: a TFRecord file is a sequence of records, each
//   uint64  length           little-endian, the number of data bytes
//   uint32  masked CRC32C of the 8 length bytes
//   byte    data[length]
//   uint32  masked CRC32C of the data
// with no file header and no padding: the file is the records back to back. The length has its
// own checksum so that a reader can trust it before it skips or allocates `length` bytes. All
// integers are little-endian whatever the machine's order, so they are written byte by byte.

namespace tfrecord_impl {
inline void put_le(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFFu));
}
inline std::uint64_t get_le(std::string_view in, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= std::uint64_t{static_cast<unsigned char>(in[at + static_cast<std::size_t>(i)])} << (8 * i);
  return v;
}
}  // namespace tfrecord_impl

/// The bytes of one TFRecord holding `data` (Note [tfrecord framing]).
inline std::string frame_record(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 16);
  tfrecord_impl::put_le(out, data.size(), 8);
  tfrecord_impl::put_le(out, masked_crc32c(out), 4);
  out.append(data);
  tfrecord_impl::put_le(out, masked_crc32c(data), 4);
  return out;
}

/// One record as read from a file: where it starts, and its data.
struct record {
  std::uint64_t offset = 0;
  std::string data = {};
};

// Note [tfrecord reading]: read_records takes the records one at a time and checks both CRCs of
// each. A writer appends whole records, so a process killed while writing leaves at most the
// last record cut short: fewer than 12 bytes for its length and length CRC, or fewer than its
// length plus 4 for its data and data CRC. The read then ends cleanly after the last whole
// record, as TensorBoard's own loader does while a run is still being written. Anything else is
// corruption and an error naming the file and the record's offset: a length CRC that does not
// match (the length cannot be trusted, so nothing after it can be found), or a data CRC that
// does not match (the data was changed), wherever the record lies.

/// The records of the TFRecord bytes `bytes` (Note [tfrecord reading]); `file` names them in
/// errors. `complete`, when given, is set to whether the bytes end on a whole record.
inline std::vector<record> parse_records(std::string_view bytes, std::string_view file = "<bytes>",
                                         bool* complete = nullptr) {
  std::vector<record> out;
  std::size_t at = 0;
  if (complete) *complete = true;
  while (at < bytes.size()) {
    if (bytes.size() - at < 12) break;
    const std::uint64_t length = tfrecord_impl::get_le(bytes, at, 8);
    const auto length_crc = static_cast<std::uint32_t>(tfrecord_impl::get_le(bytes, at + 8, 4));
    FG_CHECK(unmask_crc(length_crc) == crc32c(bytes.substr(at, 8)), value_error, "fg::io::read_records: '", file,
             "': the record at offset ", at, " is corrupt: the CRC32C of its length does not match (the file is damaged)");
    if (bytes.size() - at - 12 < 4 || length > bytes.size() - at - 12 - 4) break;
    const std::string_view data = bytes.substr(at + 12, static_cast<std::size_t>(length));
    const auto data_crc = static_cast<std::uint32_t>(tfrecord_impl::get_le(bytes, at + 12 + length, 4));
    FG_CHECK(unmask_crc(data_crc) == crc32c(data), value_error, "fg::io::read_records: '", file, "': the record at offset ",
             at, " is corrupt: the CRC32C of its ", length, " data bytes does not match (the file is damaged)");
    out.push_back({at, std::string(data)});
    at += 12 + static_cast<std::size_t>(length) + 4;
  }
  if (complete) *complete = at == bytes.size();
  return out;
}

namespace tfrecord_impl {
/// The whole file `path` as bytes; a value_error naming it when it cannot be read.
inline std::string read_file_bytes(const std::string& path, std::string_view op) {
  std::ifstream in(path, std::ios::binary);
  FG_CHECK(in.good(), value_error, op, ": '", path, "': cannot open it for reading: ", std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  FG_CHECK(!in.bad(), value_error, op, ": '", path, "': cannot read it");
  return bytes;
}
}  // namespace tfrecord_impl

/// The records of the TFRecord file `path` (Note [tfrecord reading]).
inline std::vector<record> read_records(const std::string& path) {
  return parse_records(tfrecord_impl::read_file_bytes(path, "fg::io::read_records"), path);
}

// ---------------------------------------------------------------------------------------------
// Appending records to a file

/// A file that whole records are appended to (created if absent, appended to if present). Not
/// thread-safe: its owner serialises calls. Closed by close() or the destructor.
class record_file {
 public:
  record_file() = default;
  /// Opens `path` for appending; a value_error naming it when it cannot.
  explicit record_file(std::string path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    FG_CHECK(fd_ >= 0, value_error, "fg::io::record_file: '", path_, "': cannot create it: ", std::strerror(errno));
  }
  record_file(const record_file&) = delete;
  record_file& operator=(const record_file&) = delete;
  record_file(record_file&& o) noexcept : path_(std::move(o.path_)), fd_(std::exchange(o.fd_, -1)) {}
  record_file& operator=(record_file&& o) noexcept {
    if (this != &o) {
      if (fd_ >= 0) ::close(fd_);
      path_ = std::move(o.path_);
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~record_file() {
    if (fd_ >= 0) ::close(fd_);
  }

  const std::string& path() const noexcept { return path_; }
  bool is_open() const noexcept { return fd_ >= 0; }

  /// Appends `bytes` (framed records) in one write; a value_error naming the file on failure.
  void append(std::string_view bytes) {
    FG_CHECK(fd_ >= 0, value_error, "fg::io::record_file: '", path_, "': written after it was closed");
    for (std::size_t done = 0; done < bytes.size();) {
      const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      FG_CHECK(n > 0, value_error, "fg::io::record_file: '", path_,
               "': cannot write it: ", std::strerror(n < 0 ? errno : ENOSPC));
      done += static_cast<std::size_t>(n);
    }
  }
  /// Puts what was appended on disk (fsync).
  void sync() {
    if (fd_ < 0) return;
    FG_CHECK(::fsync(fd_) == 0 || errno == EINVAL || errno == ENOTSUP, value_error, "fg::io::record_file: '", path_,
             "': cannot write it to disk: ", std::strerror(errno));
  }
  /// Syncs and closes the file; later appends are errors.
  void close() {
    if (fd_ < 0) return;
    const int fd = std::exchange(fd_, -1);
    const int synced = ::fsync(fd), e = errno;
    const int closed = ::close(fd), ce = errno;
    FG_CHECK(synced == 0 || e == EINVAL || e == ENOTSUP, value_error, "fg::io::record_file: '", path_,
             "': cannot write it to disk: ", std::strerror(e));
    FG_CHECK(closed == 0, value_error, "fg::io::record_file: '", path_, "': cannot close it: ", std::strerror(ce));
  }

 private:
  std::string path_;
  int fd_ = -1;
};
}  // namespace fusegrad::io
