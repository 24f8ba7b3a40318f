#pragma once
/// \file fg::bias_add (tf.nn.bias_add): a bias vector added along the last axis (channels
/// last, NHWC), as a lazy expression that fuses with what follows (an activation, say).

#include "../ops/binary.hpp"
#include "evaluate.hpp"

namespace fusegrad {
/// value + bias, bias a vector of value's last dimension (channels last, NHWC; value of rank 2
/// or more); the gradient of bias is the sum over the other axes.
template <tensor_like X, tensor_like B>
auto bias_add(const X& value, const B& bias) {
  static_assert(std::same_as<value_type_of<X>, value_type_of<B>>,
                "fg::bias_add: value and bias must have one element type; convert one with fg::cast<T>(x)");
  const auto v = ops::to_operand(value);
  const auto b = ops::to_operand(bias);
  const fg::shape& vs = v.shape();
  const fg::shape& bs = b.shape();
  FG_CHECK(vs.rank() >= 2, shape_error,
           "fg::bias_add: value must have rank 2 or more (a batch axis and a channel axis, channels last); got shape ",
           vs);
  FG_CHECK(bs.rank() == 1 && bs[0] == vs[vs.rank() - 1], shape_error, "fg::bias_add: bias of shape ", bs,
           " does not fit value of shape ", vs, "; bias must be a vector of value's last dimension, (",
           vs[vs.rank() - 1], ",) (channels last, NHWC)");
  return v + b;
}
}  // namespace fusegrad
