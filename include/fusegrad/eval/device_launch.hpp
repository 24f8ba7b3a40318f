#pragma once
/// \file What the device evaluator's front end (eval/device.hpp) hands to its kernels
/// (eval/device_kernels.hpp): the index spaces and reducers the functors carry, and the
/// launchers, one per kind of kernel, each a template over the kernel type and element types
/// only. No Thrust here: a translation unit built with FUSEGRAD_SEPARATE_KERNELS reads this
/// file and calls the launchers, which a separate nvcc-compiled file defines (Note [separate
/// kernels] in eval/device.hpp).

#include <array>
#include <cstddef>
#include <type_traits>

#include "../core/config.hpp"
#include "../core/integer.hpp"
#include "../core/device.hpp"
#include "../core/shape.hpp"
#include "host_reduce.hpp"

namespace fusegrad::device_eval {

/// An output shape for unravelling flat indices on the device.
struct index_space {
  std::array<index_t, max_rank> dims{};
  std::size_t rank = 0;

  index_space() = default;
  explicit index_space(const fg::shape& s) : rank(s.rank()) {
    for (std::size_t d = 0; d < rank; ++d) dims[d] = static_cast<index_t>(s[d]);
  }
  /// Writes the multi-index of flat (row-major) index i into idx.
  FG_HD void unravel(index_t i, index_t* idx) const {
    FG_UNROLL for (std::size_t d = max_rank; d-- > 0;) {  // Note [device parameters]
      if (d >= rank) continue;
      idx[d] = i % dims[d];
      i /= dims[d];
    }
  }
};

/// Reducer R's combine (ops/reducers.hpp) as the functor the device kernels call.
template <class R> struct combine {
  using acc = typename R::acc;
  FG_HD acc operator()(acc a, acc b) const { return R::combine(a, b); }
};

/// The iteration of a reduction: output element o (row-major over the kept axes) and reduced
/// element r (row-major over the reduced axes) name one element of the input. Note [device
/// reductions]: a reduction folds its input in two steps. Each output's reduced elements are
/// split among `chunks` threads, thread c taking r = c, c + chunks, ... (neighbouring threads
/// read neighbouring elements), and folding them straight from the fused expression into one
/// partial: one thrust::transform, the one pass over the data, and the only kernel that depends
/// on the expression. The partials are then folded by a kernel that depends only on the reducer
/// and the types: thrust::reduce for a full reduction, a transform folding each output's
/// partials for the others. CUB's reduce kernels over the expression itself (a
/// thrust::transform_reduce) would inline the whole chain with its index arithmetic once per
/// item per thread, in two kernels: they made nvcc's device compiler take many minutes per
/// expression, and each expression cost three kernels instead of one.
struct segment_space {
  std::array<index_t, max_rank> dims{};  ///< the iteration shape
  std::array<bool, max_rank> kept_axis{};  ///< whether axis d is kept (else reduced)
  std::array<index_t, max_rank> step{};  ///< `chunks` as digits over the reduced axes (0 on kept ones)
  std::size_t rank = 0;
  index_t count = 1;  ///< elements folded into each output

  segment_space(const fg::shape& iter, const fg::shape& keep) : rank(iter.rank()) {
    for (std::size_t d = 0; d < rank; ++d) {
      dims[d] = static_cast<index_t>(iter[d]);
      kept_axis[d] = keep[d] != 1;
      if (!kept_axis[d]) count *= dims[d];
    }
  }
  /// Sets the stride between the elements one thread folds (less than count).
  void set_step(index_t chunks) {
    for (std::size_t d = rank; d-- > 0;) {
      if (kept_axis[d]) continue;
      step[d] = chunks % dims[d];
      chunks /= dims[d];
    }
  }
  /// The multi-index of output o (row-major over the kept axes) and reduced element r
  /// (row-major over the reduced axes). Every array is indexed by an unrolled axis, so the
  /// functor stays in the parameter space and idx in registers (Note [device parameters]).
  FG_HD void unravel(index_t o, index_t r, index_t* idx) const {
    FG_UNROLL for (std::size_t d = max_rank; d-- > 0;) {
      if (d >= rank) continue;
      if (kept_axis[d]) {
        idx[d] = o % dims[d];
        o /= dims[d];
      } else {
        idx[d] = r % dims[d];
        r /= dims[d];
      }
    }
  }
  /// Moves idx `chunks` reduced elements on: an addition with carry over the reduced axes.
  FG_HD void advance(index_t* idx) const {
    index_t carry = 0;
    FG_UNROLL for (std::size_t d = max_rank; d-- > 0;) {
      if (d >= rank || kept_axis[d]) continue;
      const index_t v = idx[d] + step[d] + carry;
      carry = v >= dims[d] ? 1 : 0;
      idx[d] = v - carry * dims[d];
    }
  }
};

/// Note [device reductions]: a reduction on the device is one pass over its fused operand. Each
/// output's reduced elements are cut into chunks (a thread folds every chunks-th element, from
/// the fused expression, so nothing is materialised), which is the only kernel that depends on
/// the expression; the partials are then folded by kernels that depend on the reducer and the
/// type alone: thrust::reduce for a full reduction, one thread per output for the others. A
/// full reduction aims for full_reduce_threads threads, the others for reduce_threads, none
/// folding fewer than min_chunk elements. combine<R> calls reducer R's own combine.
/// Where partial (o, c) of a reduction lives: outputs fastest when the innermost axis is kept
/// (neighbouring threads then read neighbouring outputs), chunks fastest otherwise.
struct partial_layout {
  index_t outputs, chunks;
  bool outputs_fastest;
  FG_HD index_t at(index_t o, index_t c) const { return outputs_fastest ? c * outputs + o : o * chunks + c; }
};

/// Threads a reduction aims for (more for a full reduction, whose partials Thrust folds in
/// parallel; the partials of the others are folded one output per thread), and the fewest
/// elements one thread folds.
inline constexpr index_t reduce_threads = index_t{1} << 16, full_reduce_threads = index_t{1} << 18;
inline constexpr index_t min_chunk = 32;

/// Element (batch, i, j) of the batched row-major product op(A) op(B), summed over k.
template <class T>
struct product_element {
  const T* a;
  const T* b;
  index_t m, n, k, step_a, step_b;
  bool ta, tb;
  FG_HD T operator()(index_t e) const {
    const index_t j = e % n, i = (e / n) % m, p = e / (m * n);
    const T* pa = a + p * step_a;
    const T* pb = b + p * step_b;
    T acc = 0;
    for (index_t q = 0; q < k; ++q) acc += (ta ? pa[q * m + i] : pa[i * k + q]) * (tb ? pb[j * k + q] : pb[q * n + j]);
    return acc;
  }
};

/// A reduced value as the element type, divided by `divisor` for floating types (a mean).
template <class T, class A>
FG_HD T finish(A a, [[maybe_unused]] T divisor) {
  if constexpr (std::is_floating_point_v<T>) return static_cast<T>(a) / divisor;
  else return static_cast<T>(a);
}

/// Runs one elementwise kernel: dst[i] = k at output element i, for the n elements of `out`
/// (flat: every leaf of k walks with the output, Note [device functors]).
template <class K, class T>
void launch_elementwise(const K& k, const index_space& out, bool flat, std::size_t n, fg::device d, T* dst);

/// Runs a reduction of kernel k with reducer combine C (Note [device reductions]) into dst,
/// dividing floating results by `divisor`. flat: a full reduction of a flat kernel.
template <class K, class C, class T>
void launch_reduction(const K& k, const segment_space& s, const partial_layout& p, bool flat,
                      typename C::acc identity, T divisor, fg::device d, T* dst);

/// Writes v into n elements of device memory on d.
template <class T>
void launch_fill(T* dst, std::size_t n, T v, fg::device d);

/// Writes the `outputs` elements of the product f into c (integer matmul).
template <class T>
void launch_product(const product_element<T>& f, std::size_t outputs, fg::device d, T* c);
}  // namespace fusegrad::device_eval
