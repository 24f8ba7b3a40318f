#pragma once
/// \file The device convolutions, device_eval::run_conv (Note [convolution on a device],
/// eval/conv.hpp): cuDNN under CUDA (cuda/include/fusegrad/cuda/dnn.hpp, Note [cudnn
/// convolutions]); under a host Thrust system "/gpu:0" memory is host memory (Note [device
/// systems]), and the host's convolutions run on it in place. Included by eval/conv.hpp when
/// FUSEGRAD_DEVICE is defined.

#include "../core/config.hpp"
#include "../ops/conv_rules.hpp"
#include "device_runtime.hpp"

#if FUSEGRAD_CUDA_SYSTEM
#include <fusegrad/cuda/dnn.hpp>
#endif

namespace fusegrad::device_eval {
/// Runs the convolution r over a and b (in ops::conv_pass's order) into out, on GPU d.
template <class T>
void run_conv(const ops::conv_request& r, const T* a, const T* b, T* out, fg::device d) {
#if FUSEGRAD_CUDA_SYSTEM
  cuda::conv<T>(r, a, b, out, d);
#else
  (void)d;
  host::run_conv(r, a, b, out);
#endif
}
}  // namespace fusegrad::device_eval
