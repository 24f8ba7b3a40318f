#pragma once
/// \file fg::io::read_idx: the IDX format of MNIST and Fashion-MNIST, read into host-order values.
/// An IDX file is big-endian: a magic number of two zero bytes, an element type code and a rank;
/// the rank's dimension sizes as 32-bit unsigned integers; then the values, row-major. Files
/// come gzip-compressed or plain and are read through zlib (link with -lz). Nothing is trusted:
/// a short or long file, a bad header, a size past idx_max_bytes or a gzip error throws
/// fg::value_error naming the file and what was wrong (Note [idx reading]).

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/shape.hpp"

namespace fusegrad::io {

/// An IDX file's element type: the third byte of its magic number.
enum class idx_type : std::uint8_t {
  uint8 = 0x08,
  int8 = 0x09,
  int16 = 0x0B,
  int32 = 0x0C,
  float32 = 0x0D,
  float64 = 0x0E,
};

/// The type's name as numpy spells it: "uint8", "int8", "int16", "int32", "float32", "float64".
constexpr std::string_view name(idx_type t) noexcept {
  switch (t) {
    case idx_type::uint8: return "uint8";
    case idx_type::int8: return "int8";
    case idx_type::int16: return "int16";
    case idx_type::int32: return "int32";
    case idx_type::float32: return "float32";
    case idx_type::float64: return "float64";
  }
  return "unknown";
}

/// The values of an IDX file in host byte order, in a vector of the file's own element type
/// (the alternatives in the order of the type codes: uint8, int8, int16, int32, float32, float64).
using idx_values = std::variant<std::vector<std::uint8_t>, std::vector<std::int8_t>, std::vector<std::int16_t>,
                                std::vector<std::int32_t>, std::vector<float>, std::vector<double>>;

/// What an IDX file holds: its shape and its values, row-major.
struct idx_array {
  fusegrad::shape shape = {};
  idx_values values = {};

  /// The file's element type (which vector `values` holds).
  idx_type type() const noexcept {
    constexpr idx_type types[] = {idx_type::uint8,  idx_type::int8,    idx_type::int16,
                                  idx_type::int32,  idx_type::float32, idx_type::float64};
    return types[values.index()];
  }
  /// The number of values.
  std::size_t size() const noexcept {
    return std::visit([](const auto& v) { return v.size(); }, values);
  }
};

/// The most bytes of values read_idx accepts (16 GiB): a header whose dimensions call for more
/// is refused before anything is allocated.
inline constexpr std::uint64_t idx_max_bytes = std::uint64_t{1} << 34;

/// Note [idx reading]: the header is checked before any value is read: two zero bytes, a
/// known type code, a rank from 1 to fg::max_rank, and dimensions whose product (of the nonzero
/// ones, as fg::shape counts) times the element size fits idx_max_bytes. The value buffer then
/// grows with the data that actually arrives (from 1 MiB, doubling), so a header that promises
/// more than the file holds costs at most twice what the file holds before the short read is
/// reported. After the values, the data must end: trailing bytes are an error, as a size that
/// does not match the dimensions means a damaged or misread file.
/// Gzip is recognised by its magic bytes (1f 8b); anything else is read as it is, as zlib's
/// gzread does. The file reader uses gzopen/gzread; the in-memory reader runs inflate by the
/// same rules, so both give the same values and the same errors for the same bytes: a stream
/// cut short is "unexpected end of file", bytes after a gzip member that do not start another
/// member are ignored (gzip's own rule), and a corrupt stream is zlib's message. A gzip stream
/// is always read to its end, so its checksum is checked, and its own error wins over what its
/// bytes seem to say (a header or size problem is reported only when the stream is sound): the
/// decompressed bytes of a corrupt stream mean nothing, and gzread, which decompresses ahead of
/// what it is asked for, would otherwise report one or the other depending on its buffer size.

namespace impl {

template <class... A>
[[noreturn, gnu::cold]] void idx_fail(const A&... a) {
  FG_CHECK(false, value_error, a...);
  __builtin_unreachable();
}
/// What the decompressed bytes say is wrong (header, size); reported after the rest of a gzip
/// stream is read, unless that stream is corrupt (Note [idx reading]).
struct idx_format_error : value_error {
  using value_error::value_error;
};
template <class... A>
[[noreturn, gnu::cold]] void idx_format_fail(const A&... a) {
  FG_CHECK(false, idx_format_error, a...);
  __builtin_unreachable();
}

/// "0x1f" for a byte.
inline std::string idx_hex(unsigned b) {
  constexpr char digits[] = "0123456789abcdef";
  return {'0', 'x', digits[(b >> 4) & 15], digits[b & 15]};
}

/// Where read_idx's bytes come from.
class idx_source {
 public:
  virtual ~idx_source() = default;
  /// Reads up to n bytes into dst; fewer only where the data ends. A read or gzip error throws.
  virtual std::size_t read(void* dst, std::size_t n) = 0;
  /// Whether the bytes are a gzip stream (and so end with a checksum).
  virtual bool compressed() const = 0;
  /// Reads to the end of the data; returns how many bytes there were, counting at most `limit`
  /// of plain data (a gzip stream is always read to its end, so its checksum is checked).
  std::size_t skip_rest(std::size_t limit) {
    unsigned char scratch[4096];
    std::size_t count = 0, k = 0;
    do {
      k = read(scratch, sizeof scratch);
      count += k;
    } while (k == sizeof scratch && (compressed() || count < limit));
    return count;
  }
};

/// A file through gzopen/gzread (which read plain files as they are).
class idx_file_source final : public idx_source {
 public:
  idx_file_source(const std::filesystem::path& path, const std::string& what) : path_(path.string()), what_(what) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) idx_fail(what_, ": cannot read it: it is a directory");
    errno = 0;
    file_ = gzopen(path_.c_str(), "rb");
    if (!file_) {
      const int e = errno;
      if (e == 0) throw out_of_memory(what_ + ": cannot open it: zlib could not allocate its state");
      idx_fail(what_, ": cannot open it: ", std::strerror(e));
    }
    gzbuffer(file_, 1u << 17);
  }
  idx_file_source(const idx_file_source&) = delete;
  idx_file_source& operator=(const idx_file_source&) = delete;
  ~idx_file_source() override { gzclose_r(file_); }
  bool compressed() const override { return gzdirect(file_) == 0; }

  std::size_t read(void* dst, std::size_t n) override {
    auto* p = static_cast<unsigned char*>(dst);
    std::size_t got = 0;
    while (got < n) {
      const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(n - got, std::size_t{1} << 30));
      errno = 0;
      const int r = gzread(file_, p + got, chunk);
      if (r < 0) fail();
      if (r == 0) {
        int err = Z_OK;
        gzerror(file_, &err);
        if (err == Z_BUF_ERROR) fail();  // a gzip stream cut short: gzread ends it as end of file
        break;
      }
      got += static_cast<std::size_t>(r);
    }
    return got;
  }

 private:
  [[noreturn]] void fail() const {
    int err = Z_OK;
    const char* msg = gzerror(file_, &err);
    if (err == Z_MEM_ERROR) throw out_of_memory(what_ + ": zlib ran out of memory");
    if (err == Z_ERRNO) idx_fail(what_, ": read error: ", std::strerror(errno));
    std::string_view m = msg ? msg : "unknown error";
    // gzerror's text starts with the path; the message names the file already.
    if (m.size() > path_.size() + 2 && m.starts_with(path_) && m.substr(path_.size(), 2) == ": ")
      m.remove_prefix(path_.size() + 2);
    idx_fail(what_, ": gzip error: ", m);
  }

  std::string path_, what_;
  gzFile file_ = nullptr;
};

/// Bytes in memory: as they are, or inflated when they start with the gzip magic bytes.
class idx_memory_source final : public idx_source {
 public:
  idx_memory_source(std::span<const std::byte> in, const std::string& what) : in_(in), what_(what) {
    gzip_ = starts_gzip(0);
    if (gzip_ && inflateInit2(&z_, 15 + 16) != Z_OK) throw out_of_memory(what_ + ": zlib could not allocate its state");
  }
  idx_memory_source(const idx_memory_source&) = delete;
  idx_memory_source& operator=(const idx_memory_source&) = delete;
  ~idx_memory_source() override {
    if (gzip_) inflateEnd(&z_);
  }
  bool compressed() const override { return gzip_; }

  std::size_t read(void* dst, std::size_t n) override {
    auto* p = static_cast<unsigned char*>(dst);
    if (!gzip_) {
      const std::size_t k = std::min(n, in_.size() - pos_);
      if (k) std::memcpy(p, in_.data() + pos_, k);
      pos_ += k;
      return k;
    }
    std::size_t got = 0;
    while (got < n && !done_) {
      if (member_ended_) {
        // As gzread: another member follows when the rest starts with the magic bytes; anything
        // else after a member is ignored.
        if (!starts_gzip(pos_ - z_.avail_in)) {
          done_ = true;
          break;
        }
        inflateReset(&z_);
        member_ended_ = false;
      }
      if (z_.avail_in == 0 && pos_ < in_.size()) {
        const std::size_t k = std::min<std::size_t>(in_.size() - pos_, UINT_MAX);
        z_.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in_.data() + pos_));
        z_.avail_in = static_cast<uInt>(k);
        pos_ += k;
      }
      const uInt room = static_cast<uInt>(std::min<std::size_t>(n - got, std::size_t{1} << 30));
      z_.next_out = p + got;
      z_.avail_out = room;
      const uInt had_in = z_.avail_in;
      const int r = inflate(&z_, Z_NO_FLUSH);
      const std::size_t made = room - z_.avail_out;
      got += made;
      switch (r) {
        case Z_STREAM_END: member_ended_ = true; break;
        case Z_OK:
        case Z_BUF_ERROR:
          // No progress with no input left: the stream is cut short.
          if (made == 0 && z_.avail_in == had_in && z_.avail_in == 0 && pos_ == in_.size())
            idx_fail(what_, ": gzip error: unexpected end of file");
          break;
        case Z_MEM_ERROR: throw out_of_memory(what_ + ": zlib ran out of memory");
        case Z_DATA_ERROR: idx_fail(what_, ": gzip error: ", z_.msg ? z_.msg : "compressed data error");
        default: idx_fail(what_, ": gzip error: internal error: inflate stream corrupt");
      }
    }
    return got;
  }

 private:
  bool starts_gzip(std::size_t at) const {
    return in_.size() >= 2 && at <= in_.size() - 2 && in_[at] == std::byte{0x1f} && in_[at + 1] == std::byte{0x8b};
  }

  std::span<const std::byte> in_;
  std::string what_;
  std::size_t pos_ = 0;  // bytes handed to inflate (or copied) so far
  bool gzip_ = false, member_ended_ = false, done_ = false;
  z_stream z_{};
};

/// Reads n values of E (big-endian in the source), growing the buffer as the data arrives
/// (Note [idx reading]), and turns them to host order.
template <class E>
std::vector<E> read_idx_values(idx_source& src, std::size_t n, const std::string& what, const fusegrad::shape& s,
                               idx_type t) {
  static_assert(std::endian::native == std::endian::little || std::endian::native == std::endian::big);
  std::vector<E> v;
  constexpr std::size_t first = (std::size_t{1} << 20) / sizeof(E);
  std::size_t done = 0;
  while (done < n) {
    const std::size_t target = std::min(n, std::max(first, done * 2));
    v.resize(target);
    const std::size_t want = (target - done) * sizeof(E);
    const std::size_t got = src.read(reinterpret_cast<unsigned char*>(v.data() + done), want);
    if (got < want) {
      const std::size_t whole = done + got / sizeof(E), part = got % sizeof(E);
      idx_format_fail(what, ": the file is truncated: its dimensions ", s, " call for ", n, " ", name(t), " values (",
                      n * sizeof(E), " bytes) after the header, it holds ", whole, part ? " and " : "",
                      part ? std::to_string(part) + " bytes of another" : std::string());
    }
    done = target;
  }
  if constexpr (sizeof(E) > 1 && std::endian::native == std::endian::little) {
    using U = std::conditional_t<sizeof(E) == 2, std::uint16_t,
                                 std::conditional_t<sizeof(E) == 4, std::uint32_t, std::uint64_t>>;
    for (E& x : v) {
      U u;
      std::memcpy(&u, &x, sizeof u);
      if constexpr (sizeof(E) == 2) u = __builtin_bswap16(u);
      else if constexpr (sizeof(E) == 4) u = __builtin_bswap32(u);
      else u = __builtin_bswap64(u);
      std::memcpy(&x, &u, sizeof u);
    }
  }
  return v;
}

/// Header, values and the end of the data, from src (Note [idx reading]).
inline idx_array parse_idx(idx_source& src, const std::string& what) {
  unsigned char magic[4];
  const std::size_t got = src.read(magic, 4);
  if (got < 4)
    idx_format_fail(what, ": the file ends inside the header: expected a 4-byte magic number, found ", got, " bytes");
  if (magic[0] != 0 || magic[1] != 0)
    idx_format_fail(what, ": not an IDX file: the magic number must start with two zero bytes, found ",
                    idx_hex(magic[0]), " ", idx_hex(magic[1]));
  const unsigned code = magic[2];
  std::size_t element = 0;
  switch (code) {
    case 0x08: case 0x09: element = 1; break;
    case 0x0B: element = 2; break;
    case 0x0C: case 0x0D: element = 4; break;
    case 0x0E: element = 8; break;
    default:
      idx_format_fail(what, ": unknown element type code ", idx_hex(code),
                      " in the magic number (expected 0x08 uint8, 0x09 int8, 0x0b int16, 0x0c int32, 0x0d float32 or "
                      "0x0e float64)");
  }
  const auto type = static_cast<idx_type>(code);
  const std::size_t rank = magic[3];
  if (rank < 1 || rank > max_rank)
    idx_format_fail(what, ": the header gives rank ", rank, "; expected 1 to ", max_rank, " dimensions");
  unsigned char raw[4 * max_rank];
  const std::size_t dim_bytes = src.read(raw, 4 * rank);
  if (dim_bytes < 4 * rank)
    idx_format_fail(what, ": the file ends inside the header: expected ", rank, " dimension sizes (", 4 * rank,
                    " bytes), found ", dim_bytes, " bytes");
  std::size_t dims[max_rank];
  std::uint64_t nonzero = element;  // bytes of the nonzero dimensions, as fg::shape counts
  bool overflow = false;
  for (std::size_t d = 0; d < rank; ++d) {
    const std::uint32_t v = (std::uint32_t{raw[4 * d]} << 24) | (std::uint32_t{raw[4 * d + 1]} << 16) |
                            (std::uint32_t{raw[4 * d + 2]} << 8) | std::uint32_t{raw[4 * d + 3]};
    dims[d] = v;
    if (v != 0) overflow = overflow || __builtin_mul_overflow(nonzero, std::uint64_t{v}, &nonzero);
  }
  const fusegrad::shape s(dims, dims + rank);
  if (overflow || nonzero > idx_max_bytes)
    idx_format_fail(what, ": the dimensions ", s, " of ", name(type), " values call for more than ", idx_max_bytes,
                    " bytes (fg::io::idx_max_bytes)");
  std::size_t n = 1;
  for (std::size_t d = 0; d < rank; ++d) n *= dims[d];  // fits: bounded by the product above
  idx_array out{s, {}};
  switch (type) {
    case idx_type::uint8: out.values = read_idx_values<std::uint8_t>(src, n, what, s, type); break;
    case idx_type::int8: out.values = read_idx_values<std::int8_t>(src, n, what, s, type); break;
    case idx_type::int16: out.values = read_idx_values<std::int16_t>(src, n, what, s, type); break;
    case idx_type::int32: out.values = read_idx_values<std::int32_t>(src, n, what, s, type); break;
    case idx_type::float32: out.values = read_idx_values<float>(src, n, what, s, type); break;
    case idx_type::float64: out.values = read_idx_values<double>(src, n, what, s, type); break;
  }
  // The data must end here; count what follows.
  constexpr std::size_t count_limit = std::size_t{1} << 20;
  if (const std::size_t extra = src.skip_rest(count_limit))
    idx_format_fail(what, ": ", extra < count_limit || src.compressed() ? "" : "at least ", extra, " bytes follow the ",
                    n, " ", name(type), " values that the dimensions ", s, " call for; the file must end there");
  return out;
}

/// parse_idx, with a gzip stream's own error in preference to what its bytes seem to say.
inline idx_array read_idx_from(idx_source& src, const std::string& what) {
  try {
    return parse_idx(src, what);
  } catch (const idx_format_error& e) {
    if (src.compressed()) src.skip_rest(0);  // throws if the rest of the stream is corrupt or cut
    throw value_error(e.what());
  }
}

}  // namespace impl

/// Reads an IDX file, gzip-compressed or plain: its shape and its values in host byte order.
/// A missing file, a bad header, a size past idx_max_bytes, a short or long file and a gzip error
/// throw fg::value_error naming the file and the problem.
inline idx_array read_idx(const std::filesystem::path& path) {
  const std::string what = "fg::io::read_idx: '" + path.string() + "'";
  impl::idx_file_source src(path, what);
  return impl::read_idx_from(src, what);
}

/// Reads IDX data from memory (gzip-compressed or plain), as read_idx(path) reads a file with
/// these bytes; errors name `name`.
inline idx_array read_idx(std::span<const std::byte> bytes, std::string_view name = "IDX data in memory") {
  const std::string what = "fg::io::read_idx: '" + std::string(name) + "'";
  impl::idx_memory_source src(bytes, what);
  return impl::read_idx_from(src, what);
}

}  // namespace fusegrad::io
