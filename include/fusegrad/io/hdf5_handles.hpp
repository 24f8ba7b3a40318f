#pragma once
/// \file What io/hdf5.hpp needs from the HDF5 C library (serial build, 1.10 or later), under one
/// process-wide lock (Note [hdf5 lock]): identifiers that close themselves, failures as
/// fg::value_error quoting HDF5's own message, the element types fusegrad stores and their words
/// for those it does not, string attributes, and opening a file with what is wrong with it.

#include <hdf5.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../core/dtype.hpp"
#include "../core/error.hpp"

namespace fusegrad::io::impl {

// Note [hdf5 lock]: the serial HDF5 library is not thread-safe, so every call into it is made
// under one process-wide lock, recursive so that write_hdf5's after_dataset hook may itself read
// or write files. While the lock is held HDF5's automatic error printing is off (and put back
// after): failures come back as fusegrad errors quoting the innermost message of HDF5's error
// stack. Code outside fusegrad that calls HDF5 in the same process must not run at the same time.

/// The lock of every HDF5 call (Note [hdf5 lock]).
inline std::recursive_mutex& hdf5_mutex() {
  static std::recursive_mutex m;
  return m;
}

/// Holds the HDF5 lock, with HDF5's error printing off, for its lifetime.
class hdf5_session {
 public:
  hdf5_session() : lock_(hdf5_mutex()) {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  hdf5_session(const hdf5_session&) = delete;
  hdf5_session& operator=(const hdf5_session&) = delete;
  ~hdf5_session() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

 private:
  std::unique_lock<std::recursive_mutex> lock_;
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

/// " (HDF5: <innermost message>)" from HDF5's error stack, which it then clears; "" when empty.
inline std::string hdf5_reason() {
  std::string out;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned n, const H5E_error2_t* e, void* p) -> herr_t {
        if (n == 0 && e && e->desc) {
          try {
            *static_cast<std::string*>(p) = e->desc;
          } catch (...) {  // no memory for the detail: the message goes without it
          }
        }
        return 0;
      },
      &out);
  H5Eclear2(H5E_DEFAULT);
  return out.empty() ? std::string() : " (HDF5: " + out + ")";
}

/// Throws value_error "<op>: '<path>': <what...>".
template <class... A>
[[noreturn, gnu::cold]] void hdf5_fail(std::string_view op, const std::string& path, const A&... a) {
  FG_CHECK(false, value_error, op, ": '", path, "': ", a...);
  __builtin_unreachable();
}

/// An HDF5 identifier that closes itself.
class hdf5_id {
 public:
  using closer = herr_t (*)(hid_t);
  hdf5_id(hid_t id, closer c) noexcept : id_(id), close_(c) {}
  hdf5_id(hdf5_id&& o) noexcept : id_(std::exchange(o.id_, -1)), close_(o.close_) {}
  hdf5_id& operator=(hdf5_id&&) = delete;
  ~hdf5_id() { close(); }
  hid_t get() const noexcept { return id_; }
  explicit operator bool() const noexcept { return id_ >= 0; }
  /// Closes now; a negative result is HDF5's failure.
  herr_t close() noexcept { return id_ >= 0 ? close_(std::exchange(id_, -1)) : 0; }

 private:
  hid_t id_;
  closer close_;
};

/// A new copy of the HDF5 type of d: in the file (little-endian) or in memory (native). bool
/// is h5py's: an enum FALSE = 0, TRUE = 1 over an 8-bit integer.
inline hdf5_id hdf5_type(fusegrad::dtype d, bool in_file) {
  if (d == fusegrad::dtype::boolean) {
    hdf5_id t(H5Tenum_create(H5T_NATIVE_INT8), H5Tclose);
    const signed char no = 0, yes = 1;
    if (t && (H5Tenum_insert(t.get(), "FALSE", &no) < 0 || H5Tenum_insert(t.get(), "TRUE", &yes) < 0)) t.close();
    return t;
  }
  hid_t base = -1;
  switch (d) {
    case fusegrad::dtype::float32: base = in_file ? H5T_IEEE_F32LE : H5T_NATIVE_FLOAT; break;
    case fusegrad::dtype::float64: base = in_file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE; break;
    case fusegrad::dtype::int32: base = in_file ? H5T_STD_I32LE : H5T_NATIVE_INT32; break;
    default: base = in_file ? H5T_STD_I64LE : H5T_NATIVE_INT64; break;
  }
  return {H5Tcopy(base), H5Tclose};
}

/// The element type an HDF5 type holds, if fusegrad has it: 4- and 8-byte floats and signed
/// integers of any byte order, and h5py's bool enum.
inline std::optional<fusegrad::dtype> hdf5_dtype(hid_t t) {
  const std::size_t n = H5Tget_size(t);
  switch (H5Tget_class(t)) {
    case H5T_FLOAT:
      if (n == 4) return fusegrad::dtype::float32;
      if (n == 8) return fusegrad::dtype::float64;
      return {};
    case H5T_INTEGER:
      if (H5Tget_sign(t) != H5T_SGN_2) return {};
      if (n == 4) return fusegrad::dtype::int32;
      if (n == 8) return fusegrad::dtype::int64;
      return {};
    case H5T_ENUM: {
      if (n != 1 || H5Tget_nmembers(t) != 2) return {};
      for (unsigned i = 0; i < 2; ++i) {
        char* name = H5Tget_member_name(t, i);
        signed char v = -1;
        const bool ok = name && H5Tget_member_value(t, i, &v) >= 0 &&
                        ((std::strcmp(name, "FALSE") == 0 && v == 0) || (std::strcmp(name, "TRUE") == 0 && v == 1));
        if (name) H5free_memory(name);
        if (!ok) return {};
      }
      return fusegrad::dtype::boolean;
    }
    default: return {};
  }
}

/// Words for an HDF5 element type: "16-bit float", "unsigned 8-bit integer", "string".
inline std::string hdf5_describe(hid_t t) {
  const std::string bits = std::to_string(8 * H5Tget_size(t)) + "-bit ";
  switch (H5Tget_class(t)) {
    case H5T_INTEGER: return (H5Tget_sign(t) == H5T_SGN_NONE ? "unsigned " : "signed ") + bits + "integer";
    case H5T_FLOAT: return bits + "float";
    case H5T_STRING: return "string";
    case H5T_COMPOUND: return "compound";
    case H5T_ENUM: return bits + "enum (not h5py's bool)";
    case H5T_ARRAY: return "array";
    case H5T_VLEN: return "variable-length sequence";
    case H5T_OPAQUE: return "opaque";
    case H5T_REFERENCE: return "reference";
    case H5T_BITFIELD: return "bitfield";
    default: return "unknown";
  }
}

/// Sets a string attribute on an object, false on failure. A fixed-length UTF-8 string: its
/// bytes lie in the object's header, which HDF5 checksums (a variable-length string lies in a
/// global heap that it does not, and a damaged heap crashes HDF5 1.10's reader). h5py reads it
/// as bytes.
inline bool hdf5_set_string(hid_t obj, const std::string& name, const std::string& value) {
  hdf5_id type(H5Tcopy(H5T_C_S1), H5Tclose), space(H5Screate(H5S_SCALAR), H5Sclose);
  if (!type || !space || H5Tset_size(type.get(), std::max<std::size_t>(value.size(), 1)) < 0 ||
      H5Tset_strpad(type.get(), H5T_STR_NULLPAD) < 0 || H5Tset_cset(type.get(), H5T_CSET_UTF8) < 0)
    return false;
  hdf5_id attr(H5Acreate2(obj, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  const std::string padded = value.empty() ? std::string(1, '\0') : value;
  return attr && H5Awrite(attr.get(), type.get(), padded.data()) >= 0 && attr.close() >= 0;
}

/// The string attributes of an object (variable- or fixed-length; others are passed over).
inline std::map<std::string, std::string> hdf5_strings(hid_t obj, std::string_view op, const std::string& path) {
  std::vector<std::string> names;
  hsize_t index = 0;
  const herr_t listed = H5Aiterate2(
      obj, H5_INDEX_NAME, H5_ITER_INC, &index,
      [](hid_t, const char* name, const H5A_info_t*, void* p) -> herr_t {
        try {
          static_cast<std::vector<std::string>*>(p)->emplace_back(name);
          return 0;
        } catch (...) {
          return -1;
        }
      },
      &names);
  if (listed < 0) hdf5_fail(op, path, "cannot list the attributes: the file is corrupt", hdf5_reason());
  std::map<std::string, std::string> out;
  for (const std::string& name : names) {
    hdf5_id attr(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose);
    hdf5_id type(attr ? H5Aget_type(attr.get()) : -1, H5Tclose), space(attr ? H5Aget_space(attr.get()) : -1, H5Sclose);
    if (!attr || !type || !space) hdf5_fail(op, path, "cannot read attribute '", name, "'", hdf5_reason());
    if (H5Tget_class(type.get()) != H5T_STRING || H5Sget_simple_extent_npoints(space.get()) != 1) continue;
    std::string value;
    bool ok = true;
    if (H5Tis_variable_str(type.get()) > 0) {
      char* v = nullptr;
      ok = H5Aread(attr.get(), type.get(), &v) >= 0;
      if (ok && v) value = v;
      if (v) H5free_memory(v);
    } else {
      value.assign(H5Tget_size(type.get()), '\0');
      ok = H5Aread(attr.get(), type.get(), value.data()) >= 0;
      value.resize(std::strlen(value.c_str()));
    }
    if (!ok) hdf5_fail(op, path, "cannot read attribute '", name, "'", hdf5_reason());
    out.emplace(name, std::move(value));
  }
  return out;
}

/// Bob Jenkins' lookup3 hash (hashlittle) of n bytes, the checksum of HDF5's metadata.
inline std::uint32_t lookup3(const unsigned char* k, std::size_t n, std::uint32_t init = 0) {
  const auto rot = [](std::uint32_t x, int r) { return (x << r) | (x >> (32 - r)); };
  std::uint32_t a, b, c;
  a = b = c = 0xdeadbeefU + static_cast<std::uint32_t>(n) + init;
  const auto word = [&](std::size_t i, std::size_t m) {  // bytes i.. i+m-1, little-endian
    std::uint32_t w = 0;
    for (std::size_t j = 0; j < m; ++j) w |= std::uint32_t{k[i + j]} << (8 * j);
    return w;
  };
  for (; n > 12; n -= 12, k += 12) {
    a += word(0, 4), b += word(4, 4), c += word(8, 4);
    a -= c, a ^= rot(c, 4), c += b, b -= a, b ^= rot(a, 6), a += c, c -= b, c ^= rot(b, 8), b += a;
    a -= c, a ^= rot(c, 16), c += b, b -= a, b ^= rot(a, 19), a += c, c -= b, c ^= rot(b, 4), b += a;
  }
  if (n == 0) return c;
  a += word(0, std::min<std::size_t>(n, 4));
  if (n > 4) b += word(4, std::min<std::size_t>(n - 4, 4));
  if (n > 8) c += word(8, n - 8);
  c ^= b, c -= rot(b, 14), a ^= c, a -= rot(c, 11), b ^= a, b -= rot(a, 25);
  c ^= b, c -= rot(b, 16), a ^= c, a -= rot(c, 4), b ^= a, b -= rot(a, 14), c ^= b, c -= rot(b, 24);
  return c;
}

/// Puts back the checksum of a version 2 or 3 superblock at the start of a file image: HDF5
/// 1.10's H5Fget_file_image clears the superblock's status flags in the image without
/// computing its checksum again, so the image does not open. (A correct checksum stays as it is.)
inline void hdf5_fix_superblock(std::string& image) {
  static constexpr char signature[] = "\x89HDF\r\n\x1a\n";
  if (image.size() < 48 || image.compare(0, 8, signature, 8) != 0 || (image[8] != 2 && image[8] != 3)) return;
  const std::uint32_t sum = lookup3(reinterpret_cast<const unsigned char*>(image.data()), 44);
  for (int i = 0; i < 4; ++i) image[44 + i] = static_cast<char>((sum >> (8 * i)) & 0xff);
}

/// Opens an existing HDF5 file for reading; what is wrong with it (missing, a directory, another
/// format, truncated or corrupt) in words.
inline hdf5_id hdf5_open(std::string_view op, const std::string& path) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(st)) hdf5_fail(op, path, "no such file");
  if (std::filesystem::is_directory(st)) hdf5_fail(op, path, "is a directory, not a file");
  const htri_t is = H5Fis_hdf5(path.c_str());
  if (is < 0) hdf5_fail(op, path, "cannot read it", hdf5_reason());
  if (is == 0) hdf5_fail(op, path, "not an HDF5 file (no HDF5 signature: another format, or cut short in its header)");
  hdf5_id f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!f) hdf5_fail(op, path, "cannot open it: the file is truncated or corrupt", hdf5_reason());
  return f;
}

}  // namespace fusegrad::io::impl
