#pragma once
/// \file ops::run_pool, the one entry point that runs a pool (ops::pool_request) where its
/// operands live: on the host through host::run_pool (declared here, defined for float and
/// double in eval/host_pool.hpp), on a GPU through device_eval::run_pool (eval/device_pool.hpp,
/// Note [device pools]), which each pool rule's `device` member reaches, as for convolutions
/// (Note [convolution on a device], eval/conv.hpp).
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

#if defined(FUSEGRAD_DEVICE)
#include "device_pool.hpp"
#else
namespace fusegrad::device_eval {
/// Stand-in for the device pools (eval/device_pool.hpp).
template <class T>
void run_pool(const ops::pool_request&, const T*, const T*, T*, fg::device d) {
  detail::no_backend(d, "pooling");
}
}  // namespace fusegrad::device_eval
#endif

namespace fusegrad::ops {
template <class T>
void run_pool(const pool_request& r, const T* x, const T* g, T* out, fg::device d) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "fusegrad: pools run on float or double tensors");
  const fg::shape outs = r.pass == pool_pass::backward ? r.g.input() : r.g.output();
  if (outs.elements() == 0) return;
  if (r.g.output().elements() == 0) {  // no window: a gradient of zeros
    if (d.is_gpu()) device_eval::fill(out, outs.elements(), T(0), d);
    else std::fill(out, out + outs.elements(), T(0));
    return;
  }
  if (d.is_gpu()) return device_eval::run_pool(r, x, g, out, d);
  host::run_pool(r, x, g, out);
}
}  // namespace fusegrad::ops

#if !defined(FUSEGRAD_SEPARATE_ENGINES)
#include "host_pool.hpp"
#endif
