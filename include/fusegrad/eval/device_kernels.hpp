#pragma once
/// \file The device evaluator's kernels: the `__host__ __device__` functors over an expression's
/// kernel (expr/kernel.hpp) and the launchers of eval/device_launch.hpp, each ONE kernel: a
/// Thrust algorithm over a counting iterator, or for an elementwise chain on a GPU a
/// grid-stride kernel (Note [device functors], Note [device reductions]).
/// Note [device functors]: a functor maps a flat output index to a value. When every leaf
/// walks with the output or is one element, the flat index addresses each leaf directly
/// (flat_access); otherwise it is unravelled into a multi-index over the output shape and each
/// leaf applies its broadcast strides (index_access). The kernel is trivially copyable and
/// holds only raw device pointers, so it travels to the GPU by value with the functor.

// First: it configures Thrust before any Thrust header is read.
#include "device_runtime.hpp"

#include <cstddef>
#include <new>
#include <type_traits>

#include <thrust/fill.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/reduce.h>
#include <thrust/system_error.h>
#include <thrust/transform.h>

#include "../expr/kernel.hpp"
#include "device_launch.hpp"

namespace fusegrad::device_eval {

#if FUSEGRAD_CUDA_SYSTEM
/// The policy for algorithms whose result stays on the device: no synchronisation. Every
/// device operation runs on the default stream, which orders it before any later copy, kernel
/// or free, so the host never sees a result before it is written.
inline auto launch_policy() { return thrust::cuda::par_nosync; }
/// The policy for algorithms that return a value to the host (they synchronise anyway).
inline auto sync_policy() { return thrust::cuda::par; }
#else
inline auto launch_policy() { return thrust::device; }
inline auto sync_policy() { return thrust::device; }
#endif

/// Runs f, a Thrust algorithm on device d, turning the errors Thrust reports into fusegrad's:
/// fg::out_of_memory for a failed allocation of temporary storage, fg::device_error naming
/// `what` and the device for any other failure.
template <class F>
void checked(const char* what, fg::device d, F&& f) {
  try {
    f();
  } catch (const out_of_memory&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw out_of_memory(fg::core::cat("fusegrad: ", what, " on ", d.str(), " could not allocate temporary storage"));
  } catch (const thrust::system_error& e) {
    throw device_error(fg::core::cat("fusegrad: ", what, " on ", d.str(), " failed: ", e.what()));
  }
}

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

/// Partial j of a reduction (Note [device reductions]): one thread's fold of every chunks-th
/// reduced element of one output, read from the fused expression.
template <class K, class C>
struct fold_chunk {
  K k;
  segment_space s;
  partial_layout p;
  typename C::acc identity;
  bool flat;  ///< a full reduction of a flat expression: reduced element r is flat element r
  FG_HD typename C::acc operator()(index_t j) const {
    const index_t o = p.outputs_fastest ? j % p.outputs : j / p.chunks;
    const index_t c = p.outputs_fastest ? j / p.outputs : j % p.chunks;
    typename C::acc a = identity;
    if (flat) {
      for (index_t r = c; r < s.count; r += p.chunks) a = C{}(a, static_cast<typename C::acc>(k.eval(expr::flat_access{r})));
      return a;
    }
    index_t idx[max_rank];
    s.unravel(o, c, idx);
    for (index_t r = c; r < s.count; r += p.chunks) {
      a = C{}(a, static_cast<typename C::acc>(k.eval(expr::index_access{idx, s.rank})));
      s.advance(idx);
    }
    return a;
  }
};

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

#if FUSEGRAD_CUDA_SYSTEM
/// dst[i] = f(i) for i < n: a grid-stride loop (cuda::grid_blocks blocks of cuda::grid_threads).
/// On an H200 it ran the fused chain 1.15 to 1.25 times faster than thrust::transform over a
/// counting iterator (docs/benchmarks.md, "GPU").
template <class F, class T>
__global__ void elementwise_kernel(const F f, T* dst, index_t n) {
  const index_t stride = static_cast<index_t>(blockDim.x) * gridDim.x;
  for (index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) dst[i] = f(i);
}
#endif

template <class K, class T>
void launch_elementwise(const K& k, const index_space& out, bool flat, std::size_t n, fg::device d, T* dst) {
  device_guard g(d);
#if FUSEGRAD_CUDA_SYSTEM
  elementwise_kernel<<<cuda::grid_blocks(n, d), cuda::grid_threads>>>(element_functor<K, T>{k, out, flat}, dst,
                                                                       static_cast<index_t>(n));
  cuda::check(cudaGetLastError(), "an elementwise evaluation", d);
#else
  const thrust::counting_iterator<index_t> first(0);
  checked("an elementwise evaluation", d, [&] {
    thrust::transform(launch_policy(), first, first + static_cast<index_t>(n), dst, element_functor<K, T>{k, out, flat});
  });
#endif
}

template <class K, class C, class T>
void launch_reduction(const K& k, const segment_space& s, const partial_layout& p, bool flat,
                      typename C::acc identity, T divisor, fg::device d, T* dst) {
  using A = typename C::acc;
  device_guard g(d);
  const thrust::counting_iterator<index_t> first(0);
  scratch<A> partials(static_cast<std::size_t>(p.outputs * p.chunks), d);
  checked("a reduction", d, [&] {
    thrust::transform(launch_policy(), first, first + p.outputs * p.chunks, partials.get(),
                      fold_chunk<K, C>{k, s, p, identity, flat});
    if (p.outputs == 1) {
      const A v = thrust::reduce(sync_policy(), partials.get(), partials.get() + p.chunks, identity, C{});
      thrust::fill_n(launch_policy(), dst, 1, finish(v, divisor));
    } else {
      thrust::transform(launch_policy(), first, first + p.outputs, dst, fold_partials<C, T>{partials.get(), p, identity, divisor});
    }
  });
}

template <class T>
void launch_fill(T* dst, std::size_t n, T v, fg::device d) {
  device_guard g(d);
  checked("fill", d, [&] { thrust::fill_n(launch_policy(), dst, n, v); });
}

template <class T>
void launch_product(const product_element<T>& f, std::size_t outputs, fg::device d, T* c) {
  device_guard g(d);
  const thrust::counting_iterator<index_t> first(0);
  checked("fg::matmul", d, [&] { thrust::transform(launch_policy(), first, first + static_cast<index_t>(outputs), c, f); });
}
}  // namespace fusegrad::device_eval
