#pragma once
/// \file fg::nn::batch_normalization: Keras' BatchNormalization over the last axis. Its variables,
/// made on the first call, in Keras' order: gamma (ones) and beta (zeros), trainable, then
/// moving_mean (zeros) and moving_variance (ones), which no optimizer moves. Called with
/// training = true it normalises by the batch's mean and (biased) variance over every other axis
/// and moves the moving statistics toward them, moving = moving momentum + batch (1 - momentum)
/// (Keras' defaults: momentum 0.99, epsilon 1e-3); otherwise it normalises by the moving
/// statistics. The statistics' update is not recorded on tapes.

#include <string>
#include <vector>

#include "../eager/normalization.hpp"
#include "../eager/stop_gradient.hpp"
#include "layer.hpp"

namespace fusegrad::nn {

struct batch_normalization_options {
  double momentum = 0.99, epsilon = 1e-3;
  bool center = true, scale = true;
  initializers::initializer beta_initializer = "zeros", gamma_initializer = "ones";
  initializers::initializer moving_mean_initializer = "zeros", moving_variance_initializer = "ones";
  std::string name = "batch_normalization";
};

class batch_normalization : public layer_of<batch_normalization> {
 public:
  explicit batch_normalization(batch_normalization_options o = {}) : layer_of(o.name), o_(std::move(o)) {
    FG_CHECK(o_.momentum >= 0 && o_.momentum <= 1 && o_.epsilon > 0, value_error,
             "fg::nn::batch_normalization: momentum must be in [0, 1] and epsilon positive, got ", o_.momentum, " and ",
             o_.epsilon);
  }
  std::string type_name() const override { return "BatchNormalization"; }

  template <class T>
  tensor<T> forward(const tensor<T>& x, bool training) {
    const fg::shape& s = x.shape();
    FG_CHECK(s.rank() >= 1, shape_error, "fg::nn::batch_normalization '", name(), "': needs input of rank at least 1");
    const std::size_t c = s[s.rank() - 1];
    if (!built()) {
      if (o_.scale) add_weight<T>("gamma", {c}, o_.gamma_initializer);
      if (o_.center) add_weight<T>("beta", {c}, o_.beta_initializer);
      add_weight<T>("moving_mean", {c}, o_.moving_mean_initializer, false);
      add_weight<T>("moving_variance", {c}, o_.moving_variance_initializer, false);
      set_built(s);
    }
    const std::size_t first_stat = (o_.scale ? 1 : 0) + (o_.center ? 1 : 0);
    variable<T> moving_mean = weight<T>(first_stat), moving_variance = weight<T>(first_stat + 1);
    FG_CHECK(moving_mean.shape()[0] == c, shape_error, "fg::nn::batch_normalization '", name(), "': input of shape ",
             s, " has ", c, " channels on its last axis, but the layer was built for input of shape ",
             built_input_shape());
    const tensor<T> gamma = o_.scale ? weight<T>(0).value() : tensor<T>();
    const tensor<T> beta = o_.center ? weight<T>(o_.scale ? 1 : 0).value() : tensor<T>();
    if (!training) return fusegrad::batch_normalization(x, moving_mean, moving_variance, beta, gamma, o_.epsilon);
    std::vector<long> axes;
    for (std::size_t d = 0; d + 1 < s.rank(); ++d) axes.push_back(static_cast<long>(d));
    const auto stats = fusegrad::moments(x, axes);
    const T m = static_cast<T>(o_.momentum), rest = static_cast<T>(1 - o_.momentum);
    {
      const tensor<T> mean = stop_gradient(stats.mean), variance = stop_gradient(stats.variance);
      moving_mean.assign(moving_mean.peek() * m + mean * rest);
      moving_variance.assign(moving_variance.peek() * m + variance * rest);
    }
    return fusegrad::batch_normalization(x, stats.mean, stats.variance, beta, gamma, o_.epsilon);
  }

 private:
  batch_normalization_options o_;
};
}  // namespace fusegrad::nn
