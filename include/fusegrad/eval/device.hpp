#pragma once
/// \file The device evaluator: the same typed expression the host evaluator runs becomes one
/// `__host__ __device__` functor over its kernel (expr/kernel.hpp), run by ONE kernel over the
/// output's flat indices: a grid-stride kernel of fusegrad's own for an elementwise chain
/// (forward or backward) on a GPU (`thrust::transform` under Thrust's OpenMP system), and
/// `thrust::transform` for the one pass of a reduction, whose partial results Thrust folds
/// (Note [device reductions], eval/device_launch.hpp). This front end makes the kernel and its
/// index space and calls a launcher (eval/device_kernels.hpp). Enabled by defining FUSEGRAD_DEVICE (see
/// docs/device.md).
/// Note [separate kernels]: nvcc's front end takes many times longer than g++ over fusegrad's
/// expression and gradient templates (g++ compiles the whole device test in 4.4 CPU minutes;
/// nvcc had not finished a third of it after 25; docs/device.md), although the GPU needs only
/// the kernels. A CUDA program can therefore be
/// compiled by the host compiler with FUSEGRAD_SEPARATE_KERNELS defined: there the launchers are
/// only declared, each a template over a kernel type and element types, so the object file
/// names every kernel the program needs as an undefined symbol. cuda/kernels.py reads those
/// symbols and writes a .cu file that instantiates exactly them; nvcc compiles that file, which
/// holds no expressions and no tapes, and the two link into the program.

// First: it configures Thrust before any Thrust header is read.
#include "device_runtime.hpp"

#include <algorithm>
#include <cstddef>

#include "../expr/kernel.hpp"
#include "device_launch.hpp"
#include "host_reduce.hpp"

#if !defined(FUSEGRAD_SEPARATE_KERNELS)
#include "device_kernels.hpp"
#endif

#if defined(__CUDA_ARCH__)
// Note [device pass]: nvcc compiles a .cu file twice, for the host and for the GPU, and in the
// GPU pass it also instantiates the host evaluator's templates. There the SIMD path would
// instantiate the ops' `__host__ __device__` rules with xsimd batches, which nvcc rejects in
// device code. The GPU pass never runs host loops, so it sees every expression as non-SIMD;
// the host pass, which builds the code that runs, keeps SIMD.
namespace fusegrad::inline expr {
template <> struct uniform_type<leaf<float>, float> : std::false_type {};
template <> struct uniform_type<leaf<double>, double> : std::false_type {};
template <> struct uniform_type<literal<float>, float> : std::false_type {};
template <> struct uniform_type<literal<double>, double> : std::false_type {};
template <std::size_t J> struct uniform_type<slot_leaf<float, J>, float> : std::false_type {};
template <std::size_t J> struct uniform_type<slot_leaf<double, J>, double> : std::false_type {};
}  // namespace fusegrad::expr
#endif

namespace fusegrad::device_eval {

/// Evaluates expression e, broadcast to shape `out`, into dst on device d: one kernel.
template <class E, class T>
void evaluate(const E& e, const fg::shape& out, fg::device d, T* dst) {
  ++fg::core::counters().passes;
  const std::size_t n = out.elements();
  if (n == 0) return;
  auto k = expr::make_kernel(e, out);
  const bool flat = out.rank() == 0 || host::is_flat(k, out.rank());
  launch_elementwise(k, index_space(out), flat, n, d, dst);
}

/// Writes v into n elements of device memory on d.
template <class T>
void fill(T* dst, std::size_t n, T v, fg::device d) {
  if (n != 0) launch_fill(dst, n, v, d);
}

/// Reduces e, broadcast to `iter`, with host reducer R into dst of shape `keep` (iter's rank,
/// 1 on reduced axes) on device d: one fused pass over the input (Note [device reductions]).
/// Floating results are divided by `divisor` as they are written (a mean).
template <class R, class E, class T>
void reduce(const E& e, const fg::shape& iter, const fg::shape& keep, fg::device d, T* dst, T divisor = T(1)) {
  using C = combine<R>;
  using A = typename C::acc;
  ++fg::core::counters().passes;
  const std::size_t n = iter.elements(), outputs = keep.elements();
  if (outputs == 0) return;
  const A identity = static_cast<A>(R::identity());
  if (n == 0) {
    fill(dst, outputs, finish(identity, divisor), d);
    return;
  }
  auto k = expr::make_kernel(e, iter);
  segment_space s(iter, keep);
  const auto no = static_cast<index_t>(outputs);
  const index_t wanted = std::max<index_t>(1, (outputs == 1 ? full_reduce_threads : reduce_threads) / no);
  const index_t chunks = std::max<index_t>(1, std::min(wanted, s.count / min_chunk));
  s.set_step(chunks);
  const partial_layout p{no, chunks, iter.rank() > 0 && s.kept_axis[iter.rank() - 1]};
  const bool flat = outputs == 1 && (iter.rank() == 0 || host::is_flat(k, iter.rank()));
  launch_reduction<decltype(k), C>(k, s, p, flat, identity, divisor, d, dst);
}
}  // namespace fusegrad::device_eval

#include "device_linalg.hpp"
