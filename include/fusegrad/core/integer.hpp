#pragma once
/// \file Integer arithmetic with defined results: two's complement wraparound for signed
/// integers, and TensorFlow's conversion of floating values to integers.
/// Note [integer wraparound]: signed overflow is undefined behaviour in C++, but TensorFlow
/// and numpy wrap integers around as two's complement (INT_MAX + 1 == INT_MIN). So the signed
/// integer forms of +, -, *, negation, abs, square, sums, products, cumulative sums and
/// products and integer matmul compute in the unsigned type of the same width, where
/// arithmetic is modular, and convert back, which C++20 defines as modular too. Each use sits
/// behind `if constexpr (signed_integer<T>)`, so float code compiles exactly as before.

#include <type_traits>

#include "config.hpp"

namespace fusegrad::core {

/// int32_t, int64_t (and other signed integer types; not bool).
template <class T>
concept signed_integer = std::is_integral_v<T> && std::is_signed_v<T>;

/// The unsigned type a signed T computes in: at least unsigned int, so that types narrower than
/// int do not promote back to a signed int.
template <class T>
using wrap_unsigned = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

/// a + b, wrapping around (Note [integer wraparound]).
template <signed_integer T>
FG_HD constexpr T wrapping_add(T a, T b) noexcept {
  using U = wrap_unsigned<T>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
/// a - b, wrapping around.
template <signed_integer T>
FG_HD constexpr T wrapping_sub(T a, T b) noexcept {
  using U = wrap_unsigned<T>;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}
/// a * b, wrapping around.
template <signed_integer T>
FG_HD constexpr T wrapping_mul(T a, T b) noexcept {
  using U = wrap_unsigned<T>;
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}
/// -a, wrapping around: the negation of the minimum is the minimum.
template <signed_integer T>
FG_HD constexpr T wrapping_neg(T a) noexcept {
  using U = wrap_unsigned<T>;
  return static_cast<T>(U(0) - static_cast<U>(a));
}
/// |a|, wrapping around: the absolute value of the minimum is the minimum, as in TensorFlow.
template <signed_integer T>
FG_HD constexpr T wrapping_abs(T a) noexcept {
  return a < T(0) ? wrapping_neg(a) : a;
}

/// Note [float to integer]: converting a floating value outside the range of an integer type
/// (NaN and infinities included) is undefined behaviour in C++. TensorFlow on x86 gives the
/// minimum of the integer type there (the "integer indefinite" value cvttss2si returns), and
/// so does fg::cast: in range the value truncates toward zero; NaN, +-inf and values whose
/// truncation does not fit give INT_MIN (INT64_MIN for int64).
template <signed_integer I, class F>
FG_HD constexpr I float_to_integer(F x) noexcept {
  using U = std::make_unsigned_t<I>;
  constexpr U min_bits = static_cast<U>(U(1) << (sizeof(I) * 8 - 1));
  constexpr F limit = static_cast<F>(min_bits);  // 2^(bits - 1), exact in float and double
  // Values just below -limit truncate to the minimum too, which is what the else gives.
  if (x >= -limit && x < limit) return static_cast<I>(x);
  return static_cast<I>(min_bits);
}

/// An unsigned integer type (not bool).
template <class T>
concept unsigned_integer = std::is_integral_v<T> && std::is_unsigned_v<T> && !std::is_same_v<T, bool>;

/// Note [float to unsigned]: the rule of Note [float to integer] for unsigned types, whose
/// minimum is 0: in range the value truncates toward zero (so -0.5 gives 0); NaN, +-inf and
/// values whose truncation does not fit (-1, 2^64 for uint64) give 0. fusegrad has no unsigned
/// tensors, so this serves only the conversion of a one-element tensor to a C++ scalar
/// (`unsigned(x)`), which would otherwise be undefined behaviour there.
template <unsigned_integer U, class F>
FG_HD constexpr U float_to_unsigned(F x) noexcept {
  constexpr F limit = static_cast<F>(U(1) << (sizeof(U) * 8 - 1)) * F(2);  // 2^bits, exact
  if (x > F(-1) && x < limit) return static_cast<U>(x);
  return U(0);
}
}  // namespace fusegrad::core
