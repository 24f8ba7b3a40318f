#pragma once
/// \file The device evaluator: the same typed expression the host evaluator runs becomes one
/// `__host__ __device__` functor over its kernel (expr/kernel.hpp), run by ONE Thrust algorithm
/// over a counting iterator: `thrust::transform` for an elementwise chain (forward or backward),
/// `thrust::transform_reduce` for a full reduction of a flat chain, and a segmented fold (Note
/// [device reductions]) for the other reductions. Enabled by defining FUSEGRAD_DEVICE (see
/// docs/device.md).
/// Note [device functors]: a functor maps a flat output index to a value. When every leaf
/// walks with the output or is one element, the flat index addresses each leaf directly
/// (flat_access); otherwise it is unravelled into a multi-index over the output shape and each
/// leaf applies its broadcast strides (index_access). The kernel is trivially copyable and
/// holds only raw device pointers, so it travels to the GPU by value with the functor.

// First: it configures Thrust before any Thrust header is read.
#include "device_runtime.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <type_traits>

#include <thrust/fill.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>

#include "../expr/kernel.hpp"
#include "host_reduce.hpp"

#if defined(__CUDA_ARCH__)
// Note [device pass]: nvcc compiles a .cu file twice, for the host and for the GPU, and in the
// GPU pass it also instantiates the host evaluator's templates. There the SIMD path would
// instantiate the ops' `__host__ __device__` rules with xsimd batches, which nvcc rejects in
// device code. The GPU pass never runs host loops, so it sees every expression as non-SIMD;
// the host pass, which builds the code that runs, keeps SIMD.
namespace fusegrad::expr {
template <> struct uniform_type<leaf<float>, float> : std::false_type {};
template <> struct uniform_type<leaf<double>, double> : std::false_type {};
template <> struct uniform_type<literal<float>, float> : std::false_type {};
template <> struct uniform_type<literal<double>, double> : std::false_type {};
}  // namespace fusegrad::expr
#endif

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
    for (std::size_t d = rank; d-- > 0;) {
      idx[d] = i % dims[d];
      i /= dims[d];
    }
  }
};

/// Value of kernel K at flat index i when every leaf is flat (Note [device functors]).
template <class K, class T>
struct flat_functor {
  K k;
  FG_HD T operator()(index_t i) const { return static_cast<T>(k.eval(expr::flat_access{i})); }
};

/// Value of kernel K at flat index i of the output (Note [device functors]): direct when
/// `flat`, else through the multi-index. One functor, not two, so that each expression costs
/// one kernel to compile; the branch is the same for every thread.
template <class K, class T>
struct element_functor {
  K k;
  index_space out;
  bool flat;
  FG_HD T operator()(index_t i) const {
    if (flat) return static_cast<T>(k.eval(expr::flat_access{i}));
    index_t idx[max_rank];
    out.unravel(i, idx);
    return static_cast<T>(k.eval(expr::index_access{idx, out.rank}));
  }
};

/// Writes v into n elements of device memory on d.
template <class T>
void fill(T* dst, std::size_t n, T v, fg::device d) {
  if (n == 0) return;
  device_guard g(d);
  checked("fill", d, [&] { thrust::fill_n(launch_policy(), dst, n, v); });
}

/// Evaluates expression e, broadcast to shape `out`, into dst on device d: one Thrust transform.
template <class E, class T>
void evaluate(const E& e, const fg::shape& out, fg::device d, T* dst) {
  ++fg::detail::counters().passes;
  const std::size_t n = out.elements();
  if (n == 0) return;
  auto k = expr::make_kernel(e, out);
  using K = decltype(k);
  device_guard g(d);
  const thrust::counting_iterator<index_t> first(0);
  const auto last = first + static_cast<index_t>(n);
  const bool flat = out.rank() == 0 || host::is_flat(k, out.rank());
  checked("an elementwise evaluation", d, [&] {
    thrust::transform(launch_policy(), first, last, dst, element_functor<K, T>{k, index_space(out), flat});
  });
}

/// The device form of each host reducer (eval/host_reduce.hpp): its accumulator type and a
/// `__host__ __device__` combine. max and min propagate NaN, as on the host.
template <class R> struct combine;
template <class T> struct combine<host::sum_reducer<T>> {
  using acc = typename host::sum_reducer<T>::acc;
  FG_HD acc operator()(acc a, acc b) const { return a + b; }
};
template <class T> struct combine<host::prod_reducer<T>> {
  using acc = T;
  FG_HD acc operator()(acc a, acc b) const { return a * b; }
};
template <class T> struct combine<host::max_reducer<T>> {
  using acc = T;
  FG_HD acc operator()(acc a, acc b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (b != b) return b;
      if (a != a) return a;
    }
    return b > a ? b : a;
  }
};
template <class T> struct combine<host::min_reducer<T>> {
  using acc = T;
  FG_HD acc operator()(acc a, acc b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (b != b) return b;
      if (a != a) return a;
    }
    return b < a ? b : a;
  }
};
template <> struct combine<host::all_reducer> {
  using acc = bool;
  FG_HD bool operator()(bool a, bool b) const { return a && b; }
};
template <> struct combine<host::any_reducer> {
  using acc = bool;
  FG_HD bool operator()(bool a, bool b) const { return a || b; }
};

/// The iteration of a reduction: output element o (row-major over the kept axes) and reduced
/// element r (row-major over the reduced axes) name one element of the input. Note [device
/// reductions]: a reduction folds its input in two steps, both Thrust transforms. Each output's
/// reduced elements are split among `chunks` threads, thread c taking r = c, c + chunks, ...
/// (neighbouring threads read neighbouring elements), and folding them straight from the fused
/// expression into one partial; a second transform folds each output's partials. The first is
/// the one pass over the data. (A full reduction of a flat expression is one
/// thrust::transform_reduce instead.) CUB's reduce kernels would inline the whole chain with
/// its index arithmetic once per item per thread and per offset type; for broadcast operands
/// that made nvcc's device assembler take many minutes per expression.
struct segment_space {
  std::array<index_t, max_rank> kept_dims{}, reduced_dims{};
  std::array<unsigned char, max_rank> kept_axes{}, reduced_axes{};
  std::array<index_t, max_rank> step{};  ///< `chunks` as digits over the reduced axes
  std::size_t kept = 0, reduced = 0, rank = 0;
  index_t count = 1;  ///< elements folded into each output

  segment_space(const fg::shape& iter, const fg::shape& keep) : rank(iter.rank()) {
    for (std::size_t d = 0; d < rank; ++d) {
      if (keep[d] != 1) {
        kept_dims[kept] = static_cast<index_t>(iter[d]);
        kept_axes[kept++] = static_cast<unsigned char>(d);
      } else {
        reduced_dims[reduced] = static_cast<index_t>(iter[d]);
        reduced_axes[reduced++] = static_cast<unsigned char>(d);
        count *= static_cast<index_t>(iter[d]);
      }
    }
  }
  /// Sets the stride between the elements one thread folds (less than count).
  void set_step(index_t chunks) {
    for (std::size_t j = reduced; j-- > 0;) {
      step[j] = chunks % reduced_dims[j];
      chunks /= reduced_dims[j];
    }
  }
  FG_HD void unravel(index_t o, index_t r, index_t* idx) const {
    for (std::size_t j = kept; j-- > 0;) {
      idx[kept_axes[j]] = o % kept_dims[j];
      o /= kept_dims[j];
    }
    for (std::size_t j = reduced; j-- > 0;) {
      idx[reduced_axes[j]] = r % reduced_dims[j];
      r /= reduced_dims[j];
    }
  }
  /// Moves idx `chunks` reduced elements on: an addition with carry over the reduced axes.
  FG_HD void advance(index_t* idx) const {
    index_t carry = 0;
    for (std::size_t j = reduced; j-- > 0;) {
      const index_t v = idx[reduced_axes[j]] + step[j] + carry;
      carry = v >= reduced_dims[j] ? 1 : 0;
      idx[reduced_axes[j]] = v - carry * reduced_dims[j];
    }
  }
};

/// Where partial (o, c) of a reduction lives: outputs fastest when the innermost axis is kept
/// (neighbouring threads then read neighbouring outputs), chunks fastest otherwise.
struct partial_layout {
  index_t outputs, chunks;
  bool outputs_fastest;
  FG_HD index_t at(index_t o, index_t c) const { return outputs_fastest ? c * outputs + o : o * chunks + c; }
};

/// Partial j of a reduction (Note [device reductions]): one thread's fold of every chunks-th
/// reduced element of one output, read from the fused expression.
template <class K, class C>
struct fold_chunk {
  K k;
  segment_space s;
  partial_layout p;
  typename C::acc identity;
  FG_HD typename C::acc operator()(index_t j) const {
    const index_t o = p.outputs_fastest ? j % p.outputs : j / p.chunks;
    const index_t c = p.outputs_fastest ? j / p.outputs : j % p.chunks;
    typename C::acc a = identity;
    index_t idx[max_rank];
    s.unravel(o, c, idx);
    for (index_t r = c; r < s.count; r += p.chunks) {
      a = C{}(a, static_cast<typename C::acc>(k.eval(expr::index_access{idx, s.rank})));
      s.advance(idx);
    }
    return a;
  }
};

/// A reduced value as the element type, divided by `divisor` for floating types (a mean).
template <class T, class A>
FG_HD T finish(A a, [[maybe_unused]] T divisor) {
  if constexpr (std::is_floating_point_v<T>) return static_cast<T>(a) / divisor;
  else return static_cast<T>(a);
}

/// Output o of a reduction: the fold of its partials, as the element type.
template <class C, class T>
struct fold_partials {
  const typename C::acc* partials;
  partial_layout p;
  typename C::acc identity;
  T divisor;
  FG_HD T operator()(index_t o) const {
    typename C::acc a = identity;
    for (index_t c = 0; c < p.chunks; ++c) a = C{}(a, partials[p.at(o, c)]);
    return finish(a, divisor);
  }
};

/// Threads a reduction aims for, and the fewest elements one thread folds.
inline constexpr index_t reduce_threads = index_t{1} << 16;
inline constexpr index_t min_chunk = 32;

/// Device memory for n values of A, released at scope exit.
template <class A>
class scratch {
 public:
  scratch(std::size_t n, fg::device d)
      : d_(d), p_(static_cast<A*>(system_runtime().allocate(n * sizeof(A), d))) {}
  scratch(const scratch&) = delete;
  scratch& operator=(const scratch&) = delete;
  ~scratch() { system_runtime().release(p_, d_); }
  A* get() const noexcept { return p_; }

 private:
  fg::device d_;
  A* p_;
};

/// Reduces e, broadcast to `iter`, with host reducer R into dst of shape `keep` (iter's rank,
/// 1 on reduced axes) on device d: one fused pass over the input (Note [device reductions]).
/// Floating results are divided by `divisor` as they are written (a mean).
template <class R, class E, class T>
void reduce(const E& e, const fg::shape& iter, const fg::shape& keep, fg::device d, T* dst, T divisor = T(1)) {
  using C = combine<R>;
  using A = typename C::acc;
  ++fg::detail::counters().passes;
  const std::size_t n = iter.elements(), outputs = keep.elements();
  if (outputs == 0) return;
  const A identity = static_cast<A>(R::identity());
  if (n == 0) {
    fill(dst, outputs, finish(identity, divisor), d);
    return;
  }
  auto k = expr::make_kernel(e, iter);
  using K = decltype(k);
  device_guard g(d);
  const thrust::counting_iterator<index_t> first(0);
  if (outputs == 1 && (iter.rank() == 0 || host::is_flat(k, iter.rank()))) {
    checked("a reduction", d, [&] {
      const A v = thrust::transform_reduce(sync_policy(), first, first + static_cast<index_t>(n),
                                           flat_functor<K, A>{k}, identity, C{});
      thrust::fill_n(launch_policy(), dst, 1, finish(v, divisor));
    });
    return;
  }
  segment_space s(iter, keep);
  const auto no = static_cast<index_t>(outputs);
  const index_t wanted = std::max<index_t>(1, reduce_threads / no);
  const index_t chunks = std::max<index_t>(1, std::min(wanted, s.count / min_chunk));
  s.set_step(chunks);
  const partial_layout p{no, chunks, s.kept > 0 && std::size_t{s.kept_axes[s.kept - 1]} + 1 == iter.rank()};
  scratch<A> partials(outputs * static_cast<std::size_t>(chunks), d);
  checked("a reduction", d, [&] {
    thrust::transform(launch_policy(), first, first + no * chunks, partials.get(), fold_chunk<K, C>{k, s, p, identity});
    thrust::transform(launch_policy(), first, first + no, dst, fold_partials<C, T>{partials.get(), p, identity, divisor});
  });
}
}  // namespace fusegrad::device_eval

#include "device_linalg.hpp"
