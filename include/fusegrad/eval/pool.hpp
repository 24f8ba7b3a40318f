#pragma once
/// \file ops::run_pool, the one entry point that runs a pool (ops::pool_request) where its
/// operands live: on the host through host::run_pool (declared here, defined for float and
/// double in eval/host_pool.hpp), on a GPU through device_eval::run_pool (not written yet: as
/// for convolutions, Note [convolution on a device], eval/conv.hpp, the pool rules have no
/// `device` member, so the boundary runner gives them host copies; cudnnPoolingForward and
/// cudnnPoolingBackward, with CUDNN_POOLING_MAX_DETERMINISTIC and
/// CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING, would go there, and max_pool2d_grad_grad needs a
/// kernel of its own).
///
/// In header-only use this header includes eval/host_pool.hpp, which defines the host functions
/// inline; with FUSEGRAD_SEPARATE_ENGINES it only declares them, and the compiled library's
/// source file that includes eval/host_pool.hpp defines them (Note [separate engines]).

#include <algorithm>
#include <type_traits>

#include "../core/config.hpp"
#include "../ops/pool_rules.hpp"
#include "device_hooks.hpp"

namespace fusegrad::host {
/// The pool r into out, float32, reading x and g as ops::run_pool describes.
FG_ENGINES_INLINE void run_pool(const ops::pool_request& r, const float* x, const float* g, float* out);
/// The pool r into out, float64.
FG_ENGINES_INLINE void run_pool(const ops::pool_request& r, const double* x, const double* g, double* out);
}  // namespace fusegrad::host

namespace fusegrad::device_eval {
/// The device pool (see this file's comment): not written yet.
template <class T>
void run_pool(const ops::pool_request&, const T*, const T*, T*, fg::device d) {
  throw device_error(fg::core::cat("fusegrad: pooling on ", d.str(),
                                   " has no device kernel yet; the pool rules run on host copies (eval/pool.hpp)"));
}
}  // namespace fusegrad::device_eval

namespace fusegrad::ops {
template <class T>
void run_pool(const pool_request& r, const T* x, const T* g, T* out, fg::device d) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "fusegrad: pools run on float or double tensors");
  if (d.is_gpu()) return device_eval::run_pool(r, x, g, out, d);
  const fg::shape outs = r.pass == pool_pass::backward ? r.g.input() : r.g.output();
  if (outs.elements() == 0) return;
  if (r.g.output().elements() == 0) {  // no window: a gradient of zeros
    std::fill(out, out + outs.elements(), T(0));
    return;
  }
  host::run_pool(r, x, g, out);
}
}  // namespace fusegrad::ops

#if !defined(FUSEGRAD_SEPARATE_ENGINES)
#include "host_pool.hpp"
#endif
