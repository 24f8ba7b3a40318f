#pragma once
/// \file Where ops hand work to the device backend. With FUSEGRAD_DEVICE defined, this brings in
/// the Thrust evaluator (eval/device.hpp) and the training ops' device pass
/// (eval/device_training.hpp); without it, stand-ins with the same signatures that
/// throw fg::device_error, so the device headers cost nothing to programs that do not use them
/// (no GPU tensor can exist there anyway: storage refuses to allocate one). Also the two helpers
/// ops with host-only kernels use to accept device operands.

#include <array>
#include <cstddef>

#include "../core/tensor.hpp"

#if defined(FUSEGRAD_DEVICE)
#include "device.hpp"
#include "device_training.hpp"
#else
namespace fusegrad::device_eval {
namespace detail {
[[noreturn]] inline void no_backend(fg::device d, const char* what) {
  throw device_error(fg::core::cat("fusegrad: ", what, " on ", d.str(),
                                   " needs the device backend; define FUSEGRAD_DEVICE and build with Thrust "
                                   "(see docs/device.md)"));
}
}  // namespace detail

/// Stand-in for the device evaluator's elementwise pass (eval/device.hpp).
template <class E, class T>
void evaluate(const E&, const fg::shape&, fg::device d, T*) { detail::no_backend(d, "evaluating an expression"); }
/// Stand-in for the device evaluator's reduction (eval/device.hpp).
template <class R, class E, class T>
void reduce(const E&, const fg::shape&, const fg::shape&, fg::device d, T*, T = T(1)) {
  detail::no_backend(d, "a reduction");
}
/// Stand-in for the device fill (eval/device.hpp).
template <class T>
void fill(T*, std::size_t, T, fg::device d) { detail::no_backend(d, "filling a tensor"); }
/// Stand-in for the device matrix product (eval/device_linalg.hpp).
template <class T>
void gemm(bool, bool, std::size_t, std::size_t, std::size_t, std::size_t, const T*, std::size_t, const T*, std::size_t,
          T*, fg::device d) {
  detail::no_backend(d, "fg::matmul");
}
/// Stand-in for the device pass of the training ops (eval/device_training.hpp).
template <class Rule, class T, std::size_t S>
void run_training(const Rule&, std::size_t, const T*, const T*, T*, const std::array<const T*, S>&,
                  const std::array<T*, S>&, fg::device d) {
  detail::no_backend(d, "a training op");
}
}  // namespace fusegrad::device_eval
#endif

namespace fusegrad {
/// Number of GPUs "/gpu:N" can name (tfe.num_gpus()): 0 without the device backend, 1 under a
/// host Thrust system (docs/device.md).
inline int num_gpus() {
  const core::device_runtime* r = core::active_device_runtime();
  return r ? r->count() : 0;
}
}  // namespace fusegrad

namespace fusegrad::dispatch {
/// The values of t on the host, for an op whose kernel runs there: t itself, or a copy of a
/// device tensor (the op moves its result back to t's device; see docs/device.md).
template <class T>
tensor<T> host_operand(const tensor<T>& t, const char* op) {
  FG_CHECK(t.defined(), value_error, "fg::", op, ": an operand is undefined (an unconnected gradient?)");
  return t.cpu();
}

/// Throws fg::device_error naming both devices unless a and b are the same: fusegrad never
/// copies between devices silently.
inline void check_same_device(const char* op, fg::device a, fg::device b) {
  FG_CHECK(a == b, device_error, "fg::", op, ": operands live on ", a.str(), " and ", b.str(),
           "; move one with .gpu() or .cpu() (fusegrad never copies between devices silently)");
}
}  // namespace fusegrad::dispatch
