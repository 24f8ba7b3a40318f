#pragma once
/// \file The 2-D pools with tf.nn's names and semantics on NHWC data: fg::max_pool2d and
/// fg::avg_pool2d, their gradients (TensorFlow's MaxPoolGrad, MaxPoolGradGrad and AvgPoolGrad
/// as public functions), and the global pools of Keras's GlobalMaxPooling2D and
/// GlobalAveragePooling2D. The windowed pools run through ops::run_boundary (Note [boundary
/// ops]) from the rules of ops/pool_rules.hpp (host loops, eval/pool.hpp); each gradient is
/// again one of them, so gradients of every order work. The global pools are reductions.

#include <concepts>

#include "../eval/pool.hpp"
#include "../ops/pool_rules.hpp"
#include "boundary.hpp"
#include "reduce.hpp"

namespace fusegrad {
namespace eager {
/// The element-type check every pool shares.
template <class T>
constexpr void check_pool_type() {
  static_assert(std::same_as<T, float> || std::same_as<T, double>,
                "fg::max_pool2d, fg::avg_pool2d: pools take float or double tensors; convert with fg::cast<float>(x)");
}
}  // namespace eager

/// The maximum of each ksize window of NHWC input, moved by strides (tf.nn.max_pool2d); padding skipped.
template <tensor_like X>
tensor<value_type_of<X>> max_pool2d(const X& input, size2d ksize, size2d strides, const padding_spec& padding) {
  using T = value_type_of<X>;
  eager::check_pool_type<T>();
  return ops::run_boundary<T>(ops::max_pool2d_rule{{ksize, strides, padding}}, input);
}

/// The mean of each ksize window of NHWC input over its input elements, padding not counted (tf.nn.avg_pool2d).
template <tensor_like X>
tensor<value_type_of<X>> avg_pool2d(const X& input, size2d ksize, size2d strides, const padding_spec& padding) {
  using T = value_type_of<X>;
  eager::check_pool_type<T>();
  return ops::run_boundary<T>(ops::avg_pool2d_rule{{ksize, strides, padding}}, input);
}

/// The gradient of max_pool2d(input) for the incoming gradient grad: each window's grad added at its first maximum.
template <tensor_like X, tensor_like G>
tensor<value_type_of<X>> max_pool2d_grad(const X& input, const G& grad, size2d ksize, size2d strides,
                                         const padding_spec& padding) {
  using T = value_type_of<X>;
  eager::check_pool_type<T>();
  static_assert(std::same_as<T, value_type_of<G>>, "fg::max_pool2d_grad: input and grad need the same element type");
  return ops::run_boundary<T>(ops::max_pool2d_grad_rule{{ksize, strides, padding}}, grad, input);
}

/// The gradient of max_pool2d_grad with respect to its grad (TensorFlow's MaxPoolGradGrad): grad (of input's shape)
/// read at each window's first maximum.
template <tensor_like X, tensor_like G>
tensor<value_type_of<X>> max_pool2d_grad_grad(const X& input, const G& grad, size2d ksize, size2d strides,
                                              const padding_spec& padding) {
  using T = value_type_of<X>;
  eager::check_pool_type<T>();
  static_assert(std::same_as<T, value_type_of<G>>,
                "fg::max_pool2d_grad_grad: input and grad need the same element type");
  return ops::run_boundary<T>(ops::max_pool2d_grad_grad_rule{{ksize, strides, padding}}, grad, input);
}

/// The gradient of avg_pool2d of an input of shape input_shape for the incoming gradient grad (TensorFlow's
/// AvgPoolGrad).
template <tensor_like G>
tensor<value_type_of<G>> avg_pool2d_grad(const fg::shape& input_shape, const G& grad, size2d ksize, size2d strides,
                                         const padding_spec& padding) {
  using T = value_type_of<G>;
  eager::check_pool_type<T>();
  return ops::run_boundary<T>(ops::avg_pool2d_grad_rule{{ksize, strides, padding}, input_shape}, grad);
}

namespace eager {
/// The shape check of the global pools: an NHWC tensor.
inline void check_global_pool(const char* op, const fg::shape& s) {
  FG_CHECK(s.rank() == 4, shape_error, "fg::", op,
           ": input must be 4-D NHWC (batch, height, width, channels), got shape ", s);
}
}  // namespace eager

/// The mean over height and width of NHWC input, shape (batch, channels) (Keras GlobalAveragePooling2D; reduce_mean
/// over axes {1, 2}).
template <tensor_like X>
tensor<value_type_of<X>> global_avg_pool2d(const X& input, bool keepdims = false) {
  eager::check_global_pool("global_avg_pool2d", input.shape());
  return reduce_mean(input, {1, 2}, keepdims);
}

/// The maximum over height and width of NHWC input, shape (batch, channels) (Keras GlobalMaxPooling2D; reduce_max over
/// axes {1, 2}).
template <tensor_like X>
tensor<value_type_of<X>> global_max_pool2d(const X& input, bool keepdims = false) {
  eager::check_global_pool("global_max_pool2d", input.shape());
  return reduce_max(input, {1, 2}, keepdims);
}

/// The runs of the pools of float32 and float64 tensors, compiled once in libfusegrad in package
/// mode (Note [shared op tables]): P is `extern` here, empty in src/pool.cpp.
#define FG_SHARED_POOL(P, T)                                                                                        \
  P template tensor<T> eager::boundary::run<T>(ops::max_pool2d_rule, const eager::boundary::pack<T>&);              \
  P template tensor<T> eager::boundary::run<T>(ops::avg_pool2d_rule, const eager::boundary::pack<T>&);              \
  P template tensor<T> eager::boundary::run<T>(ops::max_pool2d_grad_rule, const eager::boundary::pack<T, T>&);      \
  P template tensor<T> eager::boundary::run<T>(ops::max_pool2d_grad_grad_rule, const eager::boundary::pack<T, T>&); \
  P template tensor<T> eager::boundary::run<T>(ops::avg_pool2d_grad_rule, const eager::boundary::pack<T>&);
#if defined(FUSEGRAD_SEPARATE_ENGINES)
FG_SHARED_POOL(extern, float)
FG_SHARED_POOL(extern, double)
#endif
}  // namespace fusegrad
