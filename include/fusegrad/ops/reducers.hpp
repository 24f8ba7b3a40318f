#pragma once
/// \file The reductions' rules, written once for every evaluator: each reducer's accumulator
/// type, identity and combine (`__host__ __device__` on scalars; the host evaluator also calls
/// it on SIMD batches), and how the host folds the lanes of a batch. A reduction over an empty
/// axis gives the identity, as TensorFlow's does: 0, 1, -inf (the lowest integer) for max, +inf
/// (the highest) for min, true for all, false for any. The host evaluator (eval/host_reduce.hpp) and the device
/// one (eval/device.hpp, Note [device reductions]) both fold with these.

#include <limits>
#include <type_traits>

#include "../core/config.hpp"
#include "../core/integer.hpp"

namespace fusegrad::ops {

/// The lanes of batch b folded with reducer R's combine, from R's identity (host only).
template <class R, class B>
auto fold_lanes(B b) {
  using T = typename B::value_type;
  alignas(64) T v[B::size];
  b.store_aligned(v);
  T r = R::identity();
  for (T x : v) r = R::combine(r, x);
  return r;
}

/// A sum; float sums accumulate in double.
template <class T> struct sum_reducer {
  using acc = std::conditional_t<std::is_same_v<T, float>, double, T>;
  FG_HD static constexpr T identity() { return T(0); }
  template <class V> FG_HD static V combine(V a, V b) {
    if constexpr (fg::core::signed_integer<V>) return fg::core::wrapping_add(a, b);  // Note [integer wraparound]
    else return a + b;
  }
  template <class B> static T horizontal(B b) { return hadd(b); }  // xsimd's, by argument-dependent lookup
};
template <class T> struct prod_reducer {
  using acc = T;
  FG_HD static constexpr T identity() { return T(1); }
  template <class V> FG_HD static V combine(V a, V b) {
    if constexpr (fg::core::signed_integer<V>) return fg::core::wrapping_mul(a, b);
    else return a * b;
  }
  template <class B> static T horizontal(B b) { return fold_lanes<prod_reducer>(b); }
};
/// max and min propagate NaN, as TensorFlow's reduce_max does: a NaN operand wins, whichever
/// side it is on (b > a and b < a are false when a is NaN).
template <class T> struct max_reducer {
  using acc = T;
  FG_HD static constexpr T identity() {
    return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
  }
  template <class V> FG_HD static V combine(V a, V b) {
    if constexpr (std::is_arithmetic_v<V>) {
      if constexpr (std::is_floating_point_v<V>)
        if (b != b) return b;
      return b > a ? b : a;
    } else {
      return select(isnan(b), b, select(b > a, b, a));  // batches: xsimd's, by argument-dependent lookup
    }
  }
  template <class B> static T horizontal(B b) { return fold_lanes<max_reducer>(b); }
};
template <class T> struct min_reducer {
  using acc = T;
  FG_HD static constexpr T identity() {
    return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
  }
  template <class V> FG_HD static V combine(V a, V b) {
    if constexpr (std::is_arithmetic_v<V>) {
      if constexpr (std::is_floating_point_v<V>)
        if (b != b) return b;
      return b < a ? b : a;
    } else {
      return select(isnan(b), b, select(b < a, b, a));
    }
  }
  template <class B> static T horizontal(B b) { return fold_lanes<min_reducer>(b); }
};
struct all_reducer {
  using acc = bool;
  FG_HD static constexpr bool identity() { return true; }
  FG_HD static bool combine(bool a, bool b) { return a && b; }
};
struct any_reducer {
  using acc = bool;
  FG_HD static constexpr bool identity() { return false; }
  FG_HD static bool combine(bool a, bool b) { return a || b; }
};
}  // namespace fusegrad::ops
