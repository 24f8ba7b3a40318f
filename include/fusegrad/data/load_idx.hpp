#pragma once
/// \file fg::data::load_idx: an IDX file (io/idx.hpp) as a tensor. `load_idx<T>(path)` gives a
/// tensor<T> and refuses a value that T cannot hold exactly; `load_idx(path)` gives the tensor
/// closest to the file's type: the integer types (uint8, int8, int16, int32) as int32, float32
/// as float, float64 as double. Link with -lz.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../core/tensor.hpp"
#include "../io/idx.hpp"

namespace fusegrad::data {

namespace impl {
/// Whether the value v of an IDX file's type E converts to T and back unchanged (NaN counts as
/// held by a floating T; integral values only for an integer T, 0 and 1 only for bool).
template <class T, class E>
constexpr bool idx_value_fits(E v) noexcept {
  if constexpr (std::is_same_v<T, bool>) {
    return v == E(0) || v == E(1);
  } else if constexpr (std::is_integral_v<E>) {
    if constexpr (std::is_integral_v<T> || std::is_same_v<T, double>) return true;  // 32 bits at most
    else return static_cast<double>(static_cast<float>(v)) == static_cast<double>(v);
  } else if constexpr (std::is_floating_point_v<T>) {
    if constexpr (sizeof(T) >= sizeof(E)) return true;
    else return std::isnan(v) || std::isinf(v) ||
                (std::fabs(v) <= static_cast<double>(std::numeric_limits<float>::max()) &&
                 static_cast<double>(static_cast<float>(v)) == static_cast<double>(v));
  } else {  // floating E into an integer T: an integral value in T's range
    constexpr double bound = sizeof(T) == 4 ? 0x1p31 : 0x1p63;  // T's range is [-bound, bound)
    return std::isfinite(v) && std::trunc(v) == v && static_cast<double>(v) >= -bound &&
           static_cast<double>(v) < bound;
  }
}

/// Whether every value of type E fits T, so that no value need be checked.
template <class T, class E>
inline constexpr bool idx_type_fits = !std::is_same_v<T, bool> && std::is_integral_v<E> &&
                                      (std::is_integral_v<T> || std::is_same_v<T, double>);

/// The values of `a` as a tensor<T>, checked to fit first, through a buffer of T that the
/// tensor copies (Note [idx memory]); a non-const `a` loses its values once they are converted.
template <element_type T, class A>
tensor<T> idx_to_tensor(A& a, std::string_view source) {
  return std::visit(
      [&](auto& v) -> tensor<T> {
        using E = typename std::decay_t<decltype(v)>::value_type;
        if constexpr (!idx_type_fits<T, E>) {
          for (std::size_t i = 0; i < v.size(); ++i)
            FG_CHECK(idx_value_fits<T>(v[i]), value_error, "fg::data::load_idx<", name(dtype_of<T>()), ">: '",
                     source, "': the ", name(a.type()), " value ", +v[i], " at flat index ", i, " does not fit ",
                     name(dtype_of<T>()), " exactly");
        }
        if constexpr (std::is_same_v<E, T>) {
          return tensor<T>(a.shape, v.data());
        } else {
          const std::size_t n = v.size();
          const std::unique_ptr<T[]> out(new T[n]);  // uninitialised: each element is written next
          for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<T>(v[i]);
          if constexpr (!std::is_const_v<A>) std::vector<E>().swap(v);  // the file's values, no longer needed
          return tensor<T>(a.shape, out.get());
        }
      },
      a.values);
}
}  // namespace impl

/// Note [idx memory]: the values of a file are kept in its own type (a byte each for MNIST's
/// pixels) until they are converted. A tensor is made from a whole buffer of T, so converting
/// to another type takes the converted values once more while the tensor copies them: loading
/// Fashion-MNIST's training images as int32 (188 MB) peaks at twice that for a moment, never
/// more. load_idx frees the file's values before the copy.

/// The values of an IDX array (io::read_idx) as a tensor<T> of the same shape; a value that T
/// cannot hold exactly (a fraction or an out-of-range number for an integer T, a float64 that
/// float rounds, anything but 0 and 1 for bool) throws fg::value_error naming `source`, the
/// value and its flat index (Note [idx memory]).
template <element_type T>
tensor<T> idx_to_tensor(const io::idx_array& a, std::string_view source = "IDX data") {
  return impl::idx_to_tensor<T>(a, source);
}

/// Reads an IDX file (gzip-compressed or plain) into a tensor<T>: io::read_idx's errors, and
/// fg::value_error naming the file for a value that T cannot hold exactly.
template <element_type T>
tensor<T> load_idx(const std::filesystem::path& path) {
  io::idx_array a = io::read_idx(path);
  return impl::idx_to_tensor<T>(a, path.string());
}

/// A tensor of the element type closest to an IDX file's own.
using idx_tensor = std::variant<tensor<std::int32_t>, tensor<float>, tensor<double>>;

/// Reads an IDX file into the tensor closest to its type: uint8, int8, int16 and int32 files
/// give tensor<int32_t>, float32 files tensor<float>, float64 files tensor<double> (read it with
/// std::get or std::visit).
inline idx_tensor load_idx(const std::filesystem::path& path) {
  io::idx_array a = io::read_idx(path);
  switch (a.type()) {
    case io::idx_type::float32: return impl::idx_to_tensor<float>(a, path.string());
    case io::idx_type::float64: return impl::idx_to_tensor<double>(a, path.string());
    default: return impl::idx_to_tensor<std::int32_t>(a, path.string());
  }
}

}  // namespace fusegrad::data
