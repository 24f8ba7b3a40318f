#pragma once
/// \file fg::conv2d, its gradients fg::conv2d_backprop_input and fg::conv2d_backprop_filter, and
/// fg::conv2d_transpose, with tf.nn's names and semantics: NHWC data, HWIO filters, "SAME",
/// "VALID" or explicit padding, strides and dilations. Each runs through ops::run_boundary (Note
/// [boundary ops]) from a rule of ops/conv_rules.hpp, which asks for a convolution
/// (ops::run_conv, eval/conv.hpp): oneDNN for float32 and a direct loop for float64 on the host.
/// Each gradient is again one of these ops, so gradients of every order work. In header-only
/// use a program that includes this header links oneDNN (-ldnnl).

#include <concepts>

#include "../eval/conv.hpp"
#include "../ops/conv_rules.hpp"
#include "boundary.hpp"

namespace fusegrad {
namespace eager {
/// The element-type checks every convolution shares, with one message each.
template <class T, class U>
constexpr void check_conv_types() {
  static_assert(std::same_as<T, U>,
                "fg::conv2d: both operands need the same element type; convert one with fg::cast<T>(x)");
  static_assert(std::same_as<T, float> || std::same_as<T, double>,
                "fg::conv2d: convolutions take float or double tensors; convert with fg::cast<float>(x)");
}
}  // namespace eager

/// The 2-D convolution of NHWC input with HWIO filters (tf.nn.conv2d).
template <tensor_like X, tensor_like F>
tensor<value_type_of<X>> conv2d(const X& input, const F& filters, size2d strides, const padding_spec& padding,
                                size2d dilations = 1) {
  using T = value_type_of<X>;
  eager::check_conv_types<T, value_type_of<F>>();
  return ops::run_boundary<T>(ops::conv2d_rule{{strides, dilations, padding}}, input, filters);
}

/// The gradient of conv2d with respect to its input of shape input_shape (tf.nn.conv2d_backprop_input).
template <tensor_like F, tensor_like G>
tensor<value_type_of<F>> conv2d_backprop_input(const fg::shape& input_shape, const F& filters, const G& out_backprop,
                                               size2d strides, const padding_spec& padding, size2d dilations = 1) {
  using T = value_type_of<F>;
  eager::check_conv_types<T, value_type_of<G>>();
  return ops::run_boundary<T>(ops::conv2d_backprop_input_rule{{strides, dilations, padding}, input_shape}, filters,
                              out_backprop);
}

/// The gradient of conv2d with respect to its filters of shape filter_shape (tf.nn.conv2d_backprop_filter).
template <tensor_like X, tensor_like G>
tensor<value_type_of<X>> conv2d_backprop_filter(const X& input, const fg::shape& filter_shape, const G& out_backprop,
                                                size2d strides, const padding_spec& padding, size2d dilations = 1) {
  using T = value_type_of<X>;
  eager::check_conv_types<T, value_type_of<G>>();
  return ops::run_boundary<T>(ops::conv2d_backprop_filter_rule{{strides, dilations, padding}, filter_shape}, input,
                              out_backprop);
}

/// The transposed convolution of NHWC input with HWOI filters to output_shape (tf.nn.conv2d_transpose).
template <tensor_like X, tensor_like F>
tensor<value_type_of<X>> conv2d_transpose(const X& input, const F& filters, const fg::shape& output_shape,
                                          size2d strides, const padding_spec& padding = "SAME", size2d dilations = 1) {
  using T = value_type_of<X>;
  eager::check_conv_types<T, value_type_of<F>>();
  return ops::run_boundary<T>(
      ops::conv2d_backprop_input_rule{{strides, dilations, padding}, output_shape, /*transposed=*/true}, filters,
      input);
}

/// The runs of the convolutions of float32 and float64 tensors (the runner, its recording and
/// backward), compiled once in libfusegrad in package mode (Note [shared op tables]): P is
/// `extern` here, empty in src/conv.cpp.
#define FG_SHARED_CONV(P, T)                                                                                          \
  P template tensor<T> eager::boundary::run<T>(ops::conv2d_rule, const eager::boundary::pack<T, T>&);                 \
  P template tensor<T> eager::boundary::run<T>(ops::conv2d_backprop_input_rule, const eager::boundary::pack<T, T>&);  \
  P template tensor<T> eager::boundary::run<T>(ops::conv2d_backprop_filter_rule, const eager::boundary::pack<T, T>&);
#if defined(FUSEGRAD_SEPARATE_ENGINES)
FG_SHARED_CONV(extern, float)
FG_SHARED_CONV(extern, double)
#endif
}  // namespace fusegrad
