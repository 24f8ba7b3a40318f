#pragma once
/// \file softmax and log_softmax over any axis (tf.nn.softmax, tf.nn.log_softmax), computed
/// stably: the maximum along the axis is subtracted before exp.
/// Note [softmax recording]: each is one recorded op whose backward is TensorFlow's, written
/// with fusegrad ops over the op's own result y: softmax's is y * (g - sum(g * y)), log_softmax's
/// g - exp(y) * sum(g), one reduction and one elementwise pass. A tape that records the backward
/// step sees y as the output of this op, so it differentiates through it again: gradients of every
/// order. (As the composite exp(x - reduce_logsumexp(x)) its backward would run three entries,
/// the exp's, the logsumexp's and the sum of their gradients, over about five passes.)

#include <limits>

#include "reduce.hpp"

namespace fusegrad {
namespace eager {
/// What a stable softmax along one axis needs, in the plan's kept shape: the maximum along the
/// axis as `shift` (0 where it is infinite or NaN, so that exp(x - shift) stays defined) and
/// `sum` = sum(exp(x - shift)) along the axis. Two fused passes over x, unrecorded.
template <class T>
struct shifted_sum {
  tensor<T> shift;
  tensor<T> sum;
};
template <class T>
shifted_sum<T> shifted_exp_sum(const tensor<T>& xt, const reduce_plan& p) {
  const fg::device d = xt.device();
  const tensor<T> m = reduce_with<ops::max_reducer<T>>(expr::leaf<T>{xt}, p, xt.shape(), d);
  tensor<T> shift =
      dispatch::unrecorded_evaluate(where(abs(m) < std::numeric_limits<T>::infinity(), m, T(0)), p.keep, d);
  tensor<T> sum = reduce_with<ops::sum_reducer<T>>(exp(xt - shift), p, xt.shape(), d);
  return {std::move(shift), std::move(sum)};
}

/// axis of a tensor of shape s counted from the front, checked (`op` names the public op).
inline long class_axis(const fg::shape& s, long axis, const char* op) {
  FG_CHECK(s.rank() > 0, shape_error, "fg::", op,
           ": needs a tensor of rank 1 or more (an axis to normalise over); got a scalar");
  return static_cast<long>(core::normalize_axis(axis, s.rank(), op));
}
}  // namespace eager

/// exp(x) / sum(exp(x)) along axis (tf.nn.softmax), computed with the maximum subtracted; one
/// recorded op (Note [softmax recording]).
template <tensor_like X>
tensor<value_type_of<X>> softmax(const X& logits, long axis = -1) {
  using T = value_type_of<X>;
  static_assert(std::floating_point<T>, "fg::softmax needs a floating-point tensor; convert with fg::cast<float>(x)");
  const fg::shape s = ops::to_operand(logits).shape();
  const axes ax = eager::class_axis(s, axis, "softmax");
  const eager::reduce_plan p = eager::plan_reduce(s, ax, "softmax");
  const tensor<T> xt = eval(logits);
  if (xt.size() == 0) return xt * T(1);
  const auto [shift, sum] = eager::shifted_exp_sum(xt, p);
  // TensorFlow's arithmetic: exp(x - max) / sum.
  const tensor<T> y = dispatch::unrecorded_evaluate(exp(xt - shift) / sum, xt.shape(), xt.device());
  eager::epilogue("softmax", y, {xt.shape()}, {xt.id()}, [y, ax](const tensor<T>& g, auto) {
    return std::array{tensor<T>(y * (g - reduce_sum(g * y, ax, true)))};
  });
  return y;
}

/// x - log(sum(exp(x))) along axis (tf.nn.log_softmax), computed with the maximum subtracted;
/// one recorded op (Note [softmax recording]).
template <tensor_like X>
tensor<value_type_of<X>> log_softmax(const X& logits, long axis = -1) {
  using T = value_type_of<X>;
  static_assert(std::floating_point<T>,
                "fg::log_softmax needs a floating-point tensor; convert with fg::cast<float>(x)");
  const fg::shape s = ops::to_operand(logits).shape();
  const axes ax = eager::class_axis(s, axis, "log_softmax");
  const eager::reduce_plan p = eager::plan_reduce(s, ax, "log_softmax");
  const tensor<T> xt = eval(logits);
  if (xt.size() == 0) return xt * T(1);
  const auto [shift, sum] = eager::shifted_exp_sum(xt, p);
  const tensor<T> log_sum = dispatch::unrecorded_evaluate(log(sum), p.keep, xt.device());
  // TensorFlow's arithmetic: (x - max) - log(sum).
  const tensor<T> y = dispatch::unrecorded_evaluate(xt - shift - log_sum, xt.shape(), xt.device());
  eager::epilogue("log_softmax", y, {xt.shape()}, {xt.id()}, [y, ax](const tensor<T>& g, auto) {
    return std::array{tensor<T>(g - exp(y) * reduce_sum(g, ax, true))};
  });
  return y;
}
}  // namespace fusegrad
