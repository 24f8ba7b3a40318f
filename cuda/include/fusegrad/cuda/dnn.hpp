#pragma once
/// \file cuDNN glue: checked calls, one handle per GPU and thread, and the convolutions
/// fg::conv2d and its two backprops run on the device for float and double (Note [convolution
/// on a device], eval/conv.hpp).
///
/// Note [cudnn convolutions]: fusegrad's data are NHWC and its filters HWIO; cuDNN runs each pass
/// on NCHW data and OIHW filters, as TensorFlow's GPU kernels do for float32 and float64. Each
/// call moves its operands into those layouts and its result back with cudnnTransformTensor over
/// strided descriptors (memory-bound copies, small beside the convolution). cuDNN's NHWC
/// layout is not used: on an H200 (cuDNN 9.x) its heuristics offered no algorithm for a gradient
/// of the device test's strided float64 convolution, while NCHW has algorithms for every type
/// and pass. cuDNN pads both sides
/// of a dimension alike, where TensorFlow's SAME padding puts the odd row or column after: for
/// such a geometry the input is copied into a zeroed buffer with the padding in place (the
/// input's gradient is computed there and its interior copied out), as TensorFlow's GPU kernels
/// do. Algorithms come from cuDNN's heuristics (the _v7 queries); the
/// math mode is CUDNN_FMA_MATH, so float32 convolutions round as float32 (no TF32 tensor-core
/// math), as fusegrad's float32 products on cuBLAS do. Everything runs on the legacy default
/// stream, as fusegrad's kernels and cuBLAS calls do, so no synchronisation is needed.

#include <array>
#include <climits>
#include <cstddef>
#include <type_traits>

#include <cudnn.h>

#include <fusegrad/ops/conv_rules.hpp>

#include "runtime.hpp"

namespace fusegrad::cuda {

/// Throws fg::device_error naming the call and cuDNN's status unless it succeeded
/// (fg::out_of_memory for an allocation failure).
inline void check_dnn(cudnnStatus_t status, const char* call, fg::device d) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  if (status == CUDNN_STATUS_ALLOC_FAILED)
    throw out_of_memory(fg::core::cat("fusegrad: ", call, " on ", d.str(), " could not allocate its workspace"));
  throw device_error(fg::core::cat("fusegrad: ", call, " on ", d.str(), " failed: ", cudnnGetErrorString(status)));
}

/// This thread's cuDNN handle for GPU d, made on first use and kept to the end of the process
/// (as the cuBLAS handles are, Note [blas handles]).
inline cudnnHandle_t dnn_handle(fg::device d) {
  thread_local std::array<cudnnHandle_t, 64> handles{};
  FG_CHECK(d.index >= 0 && d.index < static_cast<int>(handles.size()), device_error, "fusegrad: ", d.str(),
           " is beyond the ", handles.size(), " GPUs fusegrad's cuDNN glue supports");
  cudnnHandle_t& h = handles[static_cast<std::size_t>(d.index)];
  if (!h) check_dnn(cudnnCreate(&h), "cudnnCreate", d);
  return h;
}

namespace dnn {
/// A cuDNN descriptor, destroyed with its owner.
template <class D, cudnnStatus_t (*Create)(D*), cudnnStatus_t (*Destroy)(D)>
class descriptor {
 public:
  explicit descriptor(fg::device d) { check_dnn(Create(&d_), "creating a cuDNN descriptor", d); }
  descriptor(const descriptor&) = delete;
  descriptor& operator=(const descriptor&) = delete;
  ~descriptor() { Destroy(d_); }
  operator D() const noexcept { return d_; }

 private:
  D d_{};
};
using tensor_desc = descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using filter_desc = descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using conv_desc =
    descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor>;

/// Device memory for the length of one call (fusegrad's allocator: stream-ordered where the
/// GPU has memory pools).
class buffer {
 public:
  buffer(std::size_t bytes, fg::device d) : d_(d), p_(bytes ? allocate(bytes, d) : nullptr) {}
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  ~buffer() {
    if (p_) release(p_, d_);
  }
  template <class T>
  T* as() const noexcept {
    return static_cast<T*>(p_);
  }

 private:
  fg::device d_;
  void* p_;
};

/// A 4-d tensor of dims (n, c, h, w) laid out with the given strides.
inline void set(cudnnTensorDescriptor_t t, cudnnDataType_t type, std::array<int, 4> dims, std::array<int, 4> strides,
                fg::device d) {
  check_dnn(cudnnSetTensor4dDescriptorEx(t, type, dims[0], dims[1], dims[2], dims[3], strides[0], strides[1],
                                         strides[2], strides[3]),
            "cudnnSetTensor4dDescriptorEx", d);
}
/// A packed NHWC tensor of n images of h x w pixels with c channels.
inline void set_nhwc(cudnnTensorDescriptor_t t, cudnnDataType_t type, int n, int h, int w, int c, fg::device d) {
  check_dnn(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NHWC, type, n, c, h, w), "cudnnSetTensor4dDescriptor", d);
}
}  // namespace dnn

/// Runs the convolution r (Note [cudnn convolutions]) over a and b, in ops::conv_pass's order,
/// into out, all on GPU d.
template <class T>
void conv(const ops::conv_request& r, const T* a, const T* b, T* out, fg::device d) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "cuDNN convolutions are float or double");
  const ops::conv_geometry& g = r.g;
  const std::size_t padded_h = g.h + static_cast<std::size_t>(g.pt + g.pb);
  const std::size_t padded_w = g.w + static_cast<std::size_t>(g.pl + g.pr);
  for (const std::size_t v : {g.n * padded_h * padded_w * g.c, g.n * g.oh * g.ow * g.o, g.kh * g.kw * g.c * g.o})
    FG_CHECK(v <= INT_MAX, shape_error, "fg::conv2d: a tensor of ", v, " elements exceeds what cuDNN indexes (",
             INT_MAX, ") on ", d.str());
  device_guard guard(d);
  cudnnHandle_t h = dnn_handle(d);
  constexpr cudnnDataType_t type = std::is_same_v<T, float> ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE;
  auto i = [](auto v) { return static_cast<int>(v); };
  const int N = i(g.n), H = i(g.h), W = i(g.w), C = i(g.c), O = i(g.o), KH = i(g.kh), KW = i(g.kw);
  const int OH = i(g.oh), OW = i(g.ow);
  const bool even = g.pt == g.pb && g.pl == g.pr;  // cuDNN pads both sides alike
  const int HP = even ? H : i(padded_h), WP = even ? W : i(padded_w);

  // fusegrad's layouts (NHWC data, HWIO filters) and cuDNN's working ones (NCHW data, OIHW
  // filters), each as (n, c, h, w) or (o, i, h, w) dims with strides.
  dnn::tensor_desc x_nhwc(d), y_nhwc(d), x_desc(d), interior(d), y_desc(d), hwio(d), oihw(d);
  dnn::filter_desc f_desc(d);
  dnn::conv_desc c_desc(d);
  dnn::set_nhwc(x_nhwc, type, N, H, W, C, d);
  dnn::set_nhwc(y_nhwc, type, N, OH, OW, O, d);
  dnn::set(x_desc, type, {N, C, HP, WP}, {C * HP * WP, HP * WP, WP, 1}, d);
  dnn::set(interior, type, {N, C, H, W}, {C * HP * WP, HP * WP, WP, 1}, d);  // the input's place in x_desc
  dnn::set(y_desc, type, {N, O, OH, OW}, {O * OH * OW, OH * OW, OW, 1}, d);
  dnn::set(hwio, type, {O, C, KH, KW}, {1, O, KW * C * O, C * O}, d);
  dnn::set(oihw, type, {O, C, KH, KW}, {C * KH * KW, KH * KW, KW, 1}, d);
  check_dnn(cudnnSetFilter4dDescriptor(f_desc, type, CUDNN_TENSOR_NCHW, O, C, KH, KW), "cudnnSetFilter4dDescriptor",
            d);
  check_dnn(cudnnSetConvolution2dDescriptor(c_desc, even ? i(g.pt) : 0, even ? i(g.pl) : 0, i(g.sh), i(g.sw),
                                            i(g.dh), i(g.dw), CUDNN_CROSS_CORRELATION, type),
            "cudnnSetConvolution2dDescriptor", d);
  check_dnn(cudnnSetConvolutionMathType(c_desc, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType", d);
  std::array<int, 4> dims{};
  check_dnn(cudnnGetConvolution2dForwardOutputDim(c_desc, x_desc, f_desc, &dims[0], &dims[1], &dims[2], &dims[3]),
            "cudnnGetConvolution2dForwardOutputDim", d);
  FG_CHECK(dims == (std::array<int, 4>{N, O, OH, OW}), device_error, "fg::conv2d on ", d.str(), ": cuDNN's output (",
           dims[0], ", ", dims[2], ", ", dims[3], ", ", dims[1], ") differs from the planned output ", g.output());

  const T one = 1, zero = 0;
  dnn::buffer filters(g.filter().elements() * sizeof(T), d);
  dnn::buffer xs(g.n * static_cast<std::size_t>(HP) * static_cast<std::size_t>(WP) * g.c * sizeof(T), d);
  dnn::buffer ys(g.output().elements() * sizeof(T), d);
  T* const inside = xs.as<T>() + (even ? 0 : g.pt * WP + g.pl);  // (pt, pl) of each padded plane
  auto move = [&](cudnnTensorDescriptor_t from, const T* src, cudnnTensorDescriptor_t to, T* dst) {
    check_dnn(cudnnTransformTensor(h, &one, from, src, &zero, to, dst), "cudnnTransformTensor", d);
  };
  auto input_in = [&](const T* x) {  // x (NHWC) into xs (NCHW, zero padding around it if uneven)
    if (!even)
      check(cudaMemsetAsync(xs.as<T>(), 0, g.n * padded_h * padded_w * g.c * sizeof(T), cudaStreamLegacy),
            "cudaMemsetAsync", d);
    move(x_nhwc, x, interior, inside);
  };
  // Picks the first algorithm cuDNN's heuristics rank that it can run, and its workspace.
  auto pick = [&](const char* pass, auto query, auto& perf) {
    int found = 0;
    check_dnn(query(perf.data(), static_cast<int>(perf.size()), &found), "cuDNN's algorithm heuristics", d);
    for (int k = 0; k < found; ++k)
      if (perf[static_cast<std::size_t>(k)].status == CUDNN_STATUS_SUCCESS) return perf[static_cast<std::size_t>(k)];
    throw device_error(fg::core::cat("fg::conv2d on ", d.str(), ": cuDNN has no ", pass, " algorithm for input ",
                                     g.input(), ", filters ", g.filter(), ", output ", g.output()));
  };

  switch (r.pass) {
    case ops::conv_pass::forward: {  // a = x, b = f (HWIO), out = y
      move(hwio, b, oihw, filters.as<T>());
      input_in(a);
      std::array<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT> perf{};
      const auto p = pick(
          "forward",
          [&](auto* res, int n, int* found) {
            return cudnnGetConvolutionForwardAlgorithm_v7(h, x_desc, f_desc, c_desc, y_desc, n, found, res);
          },
          perf);
      dnn::buffer work(p.memory, d);
      check_dnn(cudnnConvolutionForward(h, &one, x_desc, xs.as<T>(), f_desc, filters.as<T>(), c_desc, p.algo,
                                        work.as<void>(), p.memory, &zero, y_desc, ys.as<T>()),
                "cudnnConvolutionForward", d);
      move(y_desc, ys.as<T>(), y_nhwc, out);
      break;
    }
    case ops::conv_pass::backward_data: {  // a = f (HWIO), b = dy, out = dx
      move(hwio, a, oihw, filters.as<T>());
      move(y_nhwc, b, y_desc, ys.as<T>());
      std::array<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT> perf{};
      const auto p = pick(
          "input-gradient",
          [&](auto* res, int n, int* found) {
            return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, f_desc, y_desc, c_desc, x_desc, n, found, res);
          },
          perf);
      dnn::buffer work(p.memory, d);
      check_dnn(cudnnConvolutionBackwardData(h, &one, f_desc, filters.as<T>(), y_desc, ys.as<T>(), c_desc, p.algo,
                                             work.as<void>(), p.memory, &zero, x_desc, xs.as<T>()),
                "cudnnConvolutionBackwardData", d);
      move(interior, inside, x_nhwc, out);  // the padding's gradient is dropped
      break;
    }
    case ops::conv_pass::backward_filter: {  // a = x, b = dy, out = df (HWIO)
      input_in(a);
      move(y_nhwc, b, y_desc, ys.as<T>());
      std::array<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT> perf{};
      const auto p = pick(
          "filter-gradient",
          [&](auto* res, int n, int* found) {
            return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, x_desc, y_desc, c_desc, f_desc, n, found, res);
          },
          perf);
      dnn::buffer work(p.memory, d);
      check_dnn(cudnnConvolutionBackwardFilter(h, &one, x_desc, xs.as<T>(), y_desc, ys.as<T>(), c_desc, p.algo,
                                               work.as<void>(), p.memory, &zero, f_desc, filters.as<T>()),
                "cudnnConvolutionBackwardFilter", d);
      move(oihw, filters.as<T>(), hwio, out);
      break;
    }
  }
}
}  // namespace fusegrad::cuda
