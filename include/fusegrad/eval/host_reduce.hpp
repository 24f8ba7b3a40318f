#pragma once
/// \file Fused reductions on the host: the operand expression is computed a chunk at a time
/// into a small L1-resident buffer and folded at once, so the reduction is one pass over memory.

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../core/integer.hpp"
#include "host.hpp"

namespace fusegrad::host {

/// The lanes of batch b folded with reducer R's scalar combine, from R's identity.
template <class R, class B>
auto fold_lanes(B b) {
  using T = typename B::value_type;
  alignas(64) T v[B::size];
  b.store_aligned(v);
  T r = R::identity();
  for (T x : v) r = R::combine(r, x);
  return r;
}

/// A reduction: identity, scalar and SIMD combine, and the accumulator type.
template <class T> struct sum_reducer {
  static constexpr bool needs_elements = false;
  using acc = std::conditional_t<std::is_same_v<T, float>, double, T>;
  static constexpr T identity() { return T(0); }
  template <class V> static V combine(V a, V b) {
    if constexpr (fg::detail::signed_integer<V>) return fg::detail::wrapping_add(a, b);  // Note [integer wraparound]
    else return a + b;
  }
  template <class B> static T horizontal(B b) { return xsimd::hadd(b); }
};
template <class T> struct prod_reducer {
  static constexpr bool needs_elements = false;
  using acc = T;
  static constexpr T identity() { return T(1); }
  template <class V> static V combine(V a, V b) {
    if constexpr (fg::detail::signed_integer<V>) return fg::detail::wrapping_mul(a, b);
    else return a * b;
  }
  template <class B> static T horizontal(B b) { return fold_lanes<prod_reducer>(b); }
};
/// max and min propagate NaN, as TensorFlow's reduce_max does.
template <class T> struct max_reducer {
  static constexpr bool needs_elements = true;
  using acc = T;
  static constexpr T identity() {
    return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
  }
  static T combine(T a, T b) {
    if constexpr (std::is_floating_point_v<T>)
      if (b != b) return b;
    return b > a ? b : a;
  }
  template <class B> static B combine(B a, B b) { return xsimd::select(xsimd::isnan(b), b, xsimd::select(b > a, b, a)); }
  template <class B> static T horizontal(B b) { return fold_lanes<max_reducer>(b); }
};
template <class T> struct min_reducer {
  static constexpr bool needs_elements = true;
  using acc = T;
  static constexpr T identity() {
    return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
  }
  static T combine(T a, T b) {
    if constexpr (std::is_floating_point_v<T>)
      if (b != b) return b;
    return b < a ? b : a;
  }
  template <class B> static B combine(B a, B b) { return xsimd::select(xsimd::isnan(b), b, xsimd::select(b < a, b, a)); }
  template <class B> static T horizontal(B b) { return fold_lanes<min_reducer>(b); }
};
struct all_reducer {
  static constexpr bool needs_elements = false;
  using acc = bool;
  static constexpr bool identity() { return true; }
  static bool combine(bool a, bool b) { return a && b; }
};
struct any_reducer {
  static constexpr bool needs_elements = false;
  using acc = bool;
  static constexpr bool identity() { return false; }
  static bool combine(bool a, bool b) { return a || b; }
};

namespace detail {
inline constexpr std::size_t reduce_chunk = 1024;

/// Folds n values of a chunk with R, in SIMD for floating types.
template <class R, class T>
T fold_chunk(const T* v, std::size_t n) {
  std::size_t i = 0;
  T r = R::identity();
  if constexpr (FUSEGRAD_HOST_SIMD && std::is_floating_point_v<T>) {  // Note [host simd]
    using B = xsimd::batch<T>;
    constexpr std::size_t w = B::size;
    if (n >= 2 * w) {
      B a0(R::identity()), a1(R::identity());
      for (; i + 2 * w <= n; i += 2 * w) {
        a0 = R::combine(a0, B::load_unaligned(v + i));
        a1 = R::combine(a1, B::load_unaligned(v + i + w));
      }
      r = R::horizontal(R::combine(a0, a1));
    }
  }
  for (; i < n; ++i) r = R::combine(r, v[i]);
  return r;
}
}  // namespace detail

/// Reduces expression e, broadcast to shape `iter`, into `dst` of shape `keep` (same rank as
/// iter, 1 on the reduced dimensions). dst must hold R::identity() on entry.
template <class R, class E, class T = typename E::value_type, class A = typename R::acc>
void reduce_host(const E& e, const fg::shape& iter, const fg::shape& keep, A* dst) {
  ++fg::detail::counters().passes;
  constexpr bool simd = detail::use_simd<E>();
  const std::size_t rank = iter.rank();
  const bool full = keep.elements() == 1;
  const bool last_reduced = rank == 0 || keep[rank - 1] == 1;
  const auto ostr = fg::detail::contiguous_strides(keep);
  alignas(64) T tmp[detail::reduce_chunk];
  for_each_row(e, iter, full, [&](const auto& k, std::size_t, std::size_t n, const auto& idx) {
    index_t o = 0;
    if (!full)
      for (std::size_t d = 0; d + 1 < rank; ++d) o += keep[d] == 1 ? 0 : idx[d] * ostr[d];
    for (std::size_t c = 0; c < n; c += detail::reduce_chunk) {
      const std::size_t m = std::min(detail::reduce_chunk, n - c);
      auto kc = k;
      expr::for_each_leaf_kernel(kc, [&](auto& l) { l.ptr += static_cast<index_t>(c) * l.step; });
      detail::run_row<simd>(kc, m, tmp);
      if (full || last_reduced) {
        dst[o] = R::combine(dst[o], static_cast<A>(detail::fold_chunk<R>(tmp, m)));
      } else {
        for (std::size_t j = 0; j < m; ++j) dst[o + c + j] = R::combine(dst[o + c + j], static_cast<A>(tmp[j]));
      }
    }
  });
}
}  // namespace fusegrad::host
