#pragma once
/// \file Normalisations of tf.nn and tf.math: l2_normalize, moments, batch_normalization and
/// fused_batch_norm. All are composites of reductions and elementwise ops, so they fuse where
/// those do and are differentiable to every order through them.
/// Note [two-pass moments]: moments makes two fused passes over x, the mean, then the mean of
/// the squared deviations from it (square(x - mean) fused into that reduction). One pass of a
/// sum and a sum of squares would cancel catastrophically where |mean| >> stddev, and a one-pass
/// Welford fold needs a reducer of two values, which the reductions do not have. Unlike
/// tf.nn.moments, the mean is not a stop_gradient in the variance: its first derivative through
/// it is zero anyway, and keeping it makes second derivatives exact.

#include <algorithm>

#include "../eval/creation.hpp"
#include "reduce.hpp"

namespace fusegrad {

/// x * rsqrt(max(sum(x^2 along axis), epsilon)) (tf.math.l2_normalize); axis may list several axes.
template <tensor_like X>
auto l2_normalize(const X& x, const axes& axis, double epsilon = 1e-12) {
  using T = value_type_of<X>;
  static_assert(std::floating_point<T>,
                "fg::l2_normalize needs a floating-point tensor; convert with fg::cast<float>(x)");
  const auto v = ops::to_operand(x);
  const tensor<T> square_sum = reduce_sum(square(v), axis, true);
  return v * rsqrt(maximum(square_sum, static_cast<T>(epsilon)));
}

/// The mean and (biased) variance of fg::moments.
template <class T>
struct moments_result {
  tensor<T> mean;      ///< mean over the axes
  tensor<T> variance;  ///< mean of the squared deviations from the mean (divided by n, not n - 1)
};

/// Mean and variance of x over axes (tf.nn.moments); two fused passes (Note [two-pass moments]).
template <tensor_like X>
moments_result<value_type_of<X>> moments(const X& x, const axes& ax, bool keepdims = false) {
  using T = value_type_of<X>;
  static_assert(std::floating_point<T>, "fg::moments needs a floating-point tensor; convert with fg::cast<float>(x)");
  const eager::reduce_plan p = eager::plan_reduce(ops::to_operand(x).shape(), ax, "moments");
  const tensor<T> xt = eval(x);
  const tensor<T> mean = reduce_mean(xt, ax, true);
  const tensor<T> variance = reduce_mean(square(xt - mean), ax, true);
  if (keepdims) return {mean, variance};
  return {reshape(mean, p.out), reshape(variance, p.out)};
}

/// (x - mean) * scale / sqrt(variance + variance_epsilon) + offset (tf.nn.batch_normalization),
/// every operand broadcast against x; offset and scale may be undefined tensors (none).
template <tensor_like X, tensor_like M, tensor_like V>
tensor<value_type_of<X>> batch_normalization(const X& x, const M& mean, const V& variance,
                                             const tensor<value_type_of<X>>& offset,
                                             const tensor<value_type_of<X>>& scale, double variance_epsilon) {
  using T = value_type_of<X>;
  static_assert(std::floating_point<T>,
                "fg::batch_normalization needs a floating-point tensor; convert with fg::cast<float>(x)");
  static_assert(std::same_as<value_type_of<M>, T> && std::same_as<value_type_of<V>, T>,
                "fg::batch_normalization: x, mean and variance must have one element type; convert with fg::cast<T>");
  // Shapes that do not broadcast throw here, before anything is evaluated or recorded.
  constexpr const char* op = "batch_normalization";
  fg::shape s = core::broadcast_shapes(ops::to_operand(x).shape(), ops::to_operand(mean).shape(), op);
  s = core::broadcast_shapes(s, ops::to_operand(variance).shape(), op);
  if (offset.defined()) s = core::broadcast_shapes(s, offset.shape(), op);
  if (scale.defined()) s = core::broadcast_shapes(s, scale.shape(), op);
  // TensorFlow's arithmetic: inv = rsqrt(variance + epsilon) * scale; x * inv + (offset - mean * inv).
  const tensor<T> inv = scale.defined() ? tensor<T>(rsqrt(variance + variance_epsilon) * scale)
                                        : tensor<T>(rsqrt(variance + variance_epsilon));
  const tensor<T> shift = offset.defined() ? tensor<T>(offset - mean * inv) : tensor<T>(-mean * inv);
  return x * inv + shift;
}

/// What fg::fused_batch_norm returns (TensorFlow's FusedBatchNormV3 outputs).
template <class T>
struct fused_batch_norm_result {
  /// The normalised, scaled and shifted input.
  tensor<T> y;
  /// Training: the batch mean, blended into the given mean by the factor; inference: the given mean.
  tensor<T> batch_mean;
  /// Training: the batch variance times n / (n - 1), blended likewise; inference: the given variance.
  tensor<T> batch_variance;
  /// The mean y was normalised with (in training, TensorFlow's reserve_space_1).
  tensor<T> saved_mean;
  /// The variance y was normalised with (in training the batch's, divided by n: reserve_space_2).
  tensor<T> saved_variance;
};

namespace eager {
/// Checks a per-channel parameter of fused_batch_norm, named `what`: defined where `required`,
/// and of shape (channels,) where defined.
inline void check_channel_parameter(const char* what, bool defined, const fg::shape& s, std::size_t channels,
                                    const fg::shape& x, bool required) {
  FG_CHECK(defined || !required, value_error, "fg::fused_batch_norm: ", what,
           " is required (shape (channels,)) in inference mode and when exponential_avg_factor is not 1");
  FG_CHECK(!defined || s == fg::shape{channels}, shape_error, "fg::fused_batch_norm: ", what, " has shape ", s,
           "; it must be a vector of the ", channels, " channels of x of shape ", x, " (channels last, NHWC)");
}
}  // namespace eager

/// Batch normalisation of x, NHWC (or NDHWC), over every axis but the last, channels, as
/// TensorFlow's FusedBatchNormV3: in training the batch's statistics normalise x and the running
/// statistics are returned updated (with exponential_avg_factor f: (1 - f) * given + f * batch,
/// the variance with Bessel's correction); in inference the given mean and variance normalise
/// x. scale and offset may be undefined (1 and 0); mean and variance may be undefined in
/// training when f is 1. Differentiable to every order through its composite ops.
template <tensor_like X>
fused_batch_norm_result<value_type_of<X>> fused_batch_norm(const X& x, const tensor<value_type_of<X>>& scale,
                                                           const tensor<value_type_of<X>>& offset,
                                                           const tensor<value_type_of<X>>& mean = {},
                                                           const tensor<value_type_of<X>>& variance = {},
                                                           double epsilon = 1e-3, double exponential_avg_factor = 1.0,
                                                           bool is_training = true) {
  using T = value_type_of<X>;
  static_assert(std::floating_point<T>,
                "fg::fused_batch_norm needs a floating-point tensor; convert with fg::cast<float>(x)");
  const fg::shape xs = ops::to_operand(x).shape();
  FG_CHECK(xs.rank() == 4 || xs.rank() == 5, shape_error,
           "fg::fused_batch_norm: x must be 4-D (NHWC) or 5-D (NDHWC); got shape ", xs);
  const std::size_t channels = xs[xs.rank() - 1];
  const bool stats_needed = !is_training || exponential_avg_factor != 1.0;
  eager::check_channel_parameter("scale", scale.defined(), scale.shape(), channels, xs, false);
  eager::check_channel_parameter("offset", offset.defined(), offset.shape(), channels, xs, false);
  eager::check_channel_parameter("mean", mean.defined(), mean.shape(), channels, xs, stats_needed);
  eager::check_channel_parameter("variance", variance.defined(), variance.shape(), channels, xs, stats_needed);
  const tensor<T> xt = eval(x);
  const fg::device d = xt.device();
  const tensor<T> gamma = scale.defined() ? scale : fill<T>(fg::shape{channels}, T(1), d);
  const tensor<T> beta = offset.defined() ? offset : fill<T>(fg::shape{channels}, T(0), d);
  tensor<T> m, v;
  if (is_training) {
    const axes ax = xs.rank() == 4 ? axes{0, 1, 2} : axes{0, 1, 2, 3};
    const moments_result<T> batch = moments(xt, ax);
    m = batch.mean;
    v = batch.variance;
  } else {
    m = mean;
    v = variance;
  }
  // TensorFlow's arithmetic: (x - mean) * (rsqrt(variance + epsilon) * scale) + offset.
  fused_batch_norm_result<T> r;
  r.y = (xt - m) * (rsqrt(v + epsilon) * gamma) + beta;
  r.saved_mean = m;
  r.saved_variance = v;
  if (!is_training) {
    r.batch_mean = mean;
    r.batch_variance = variance;
    return r;
  }
  // TensorFlow's arithmetic, in T: n / max(n - 1, 1) and 1 - f rounded as T computes them.
  const std::size_t n = xt.size() / std::max<std::size_t>(channels, 1);
  const T bessel = static_cast<T>(n) / static_cast<T>(std::max<std::size_t>(n, 2) - 1);
  const T f = static_cast<T>(exponential_avg_factor);
  if (exponential_avg_factor == 1.0) {
    r.batch_mean = m;
    r.batch_variance = v * bessel;
  } else {
    r.batch_mean = (T(1) - f) * mean + f * m;
    r.batch_variance = (T(1) - f) * variance + f * v * bessel;
  }
  return r;
}
}  // namespace fusegrad
