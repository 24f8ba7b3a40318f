#pragma once
/// \file Fused reductions on the host: the operand expression is computed a chunk at a time
/// into a small L1-resident buffer and folded at once, so the reduction is one pass over memory.
/// The reducers themselves (identity, combine) are the ops floor's (ops/reducers.hpp).

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../core/integer.hpp"
#include "../ops/reducers.hpp"
#include "host.hpp"

namespace fusegrad::host {

namespace detail {
inline constexpr std::size_t reduce_chunk = 1024;

// nvcc's GPU pass never runs host loops (Note [device pass]): it folds without SIMD, since
// the reducers' combine is `__host__ __device__` and nvcc rejects batches in device code.
#if defined(__CUDA_ARCH__)
inline constexpr bool simd_folds = false;
#else
inline constexpr bool simd_folds = FUSEGRAD_HOST_SIMD;
#endif

/// Folds n values of a chunk with R, in SIMD for floating types.
template <class R, class T>
T fold_chunk(const T* v, std::size_t n) {
  std::size_t i = 0;
  T r = R::identity();
  if constexpr (simd_folds && std::is_floating_point_v<T>) {  // Note [host simd]
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
  ++fg::core::counters().passes;
  constexpr bool simd = detail::use_simd<E>();
  const std::size_t rank = iter.rank();
  const bool full = keep.elements() == 1;
  const bool last_reduced = rank == 0 || keep[rank - 1] == 1;
  const auto ostr = fg::core::contiguous_strides(keep);
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
