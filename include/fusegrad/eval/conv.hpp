#pragma once
/// \file ops::run_conv, the one entry point that runs a convolution (ops::conv_request) where
/// its operands live: on the host through host::run_conv (declared here; oneDNN for float, a
/// direct loop for double, both defined in eval/host_dnnl.hpp), on a GPU through
/// device_eval::run_conv (Note [convolution on a device]).
///
/// The host functions are not templates: in header-only use this header includes
/// eval/host_dnnl.hpp, which defines them inline (and brings in <dnnl.hpp>: link -ldnnl); with
/// FUSEGRAD_SEPARATE_ENGINES (Note [separate engines], eager/engines.hpp) it only declares them
/// and the compiled library's one source file that includes eval/host_dnnl.hpp defines them, so
/// no other unit sees <dnnl.hpp>.
///
/// Note [convolution on a device]: each conv rule (ops/conv_rules.hpp) has a `device` member
/// that calls ops::run_conv with its operands' device, so the boundary runner (Note [boundary
/// ops], step 5) runs a GPU tensor's convolution where it lives: device_eval::run_conv
/// (eval/device_conv.hpp), cuDNN under CUDA (Note [cudnn convolutions]). Without
/// FUSEGRAD_DEVICE no GPU tensor exists, and a stand-in that throws takes its place.

#include <algorithm>
#include <type_traits>

#include "../core/config.hpp"
#include "../ops/conv_rules.hpp"
#include "device_hooks.hpp"

namespace fusegrad::host {
/// The convolution r over a and b (in ops::conv_pass's order) into out, float32, on oneDNN.
FG_ENGINES_INLINE void run_conv(const ops::conv_request& r, const float* a, const float* b, float* out);
/// The convolution r over a and b into out, float64, by a direct loop (oneDNN 2.6 has no f64
/// convolution on CPUs).
FG_ENGINES_INLINE void run_conv(const ops::conv_request& r, const double* a, const double* b, double* out);
}  // namespace fusegrad::host

#if defined(FUSEGRAD_DEVICE)
#include "device_conv.hpp"
#else
namespace fusegrad::device_eval {
/// Stand-in for the device convolution (eval/device_conv.hpp).
template <class T>
void run_conv(const ops::conv_request&, const T*, const T*, T*, fg::device d) {
  detail::no_backend(d, "fg::conv2d");
}
}  // namespace fusegrad::device_eval
#endif

namespace fusegrad::ops {
template <class T>
void run_conv(const conv_request& r, const T* a, const T* b, T* out, fg::device d) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "fusegrad: convolutions run on float or double tensors");
  const conv_geometry& g = r.g;
  const fg::shape outs = r.pass == conv_pass::forward         ? g.output()
                         : r.pass == conv_pass::backward_data ? g.input()
                                                              : g.filter();
  const fg::shape as = r.pass == conv_pass::backward_data ? g.filter() : g.input();
  const fg::shape bs = r.pass == conv_pass::forward ? g.filter() : g.output();
  if (outs.elements() == 0) return;
  if (as.elements() == 0 || bs.elements() == 0) {  // an empty sum: zeros
    if (d.is_gpu()) device_eval::fill(out, outs.elements(), T(0), d);
    else std::fill(out, out + outs.elements(), T(0));
    return;
  }
  if (d.is_gpu()) return device_eval::run_conv(r, a, b, out, d);
  host::run_conv(r, a, b, out);
}
}  // namespace fusegrad::ops

#if !defined(FUSEGRAD_SEPARATE_ENGINES)
#include "host_dnnl.hpp"
#endif
