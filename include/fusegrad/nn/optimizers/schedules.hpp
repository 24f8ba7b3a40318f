#pragma once
/// \file Keras' learning-rate schedules, each a function of the optimizer's step (counted from
/// 0) that an optimizer takes as its learning rate: exponential_decay, piecewise_constant_decay,
/// cosine_decay.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <vector>

#include "optimizer.hpp"

namespace fusegrad::optimizers {

struct exponential_decay_options {
  double initial_learning_rate = 0.01;
  double decay_steps = 1000, decay_rate = 0.96;
  bool staircase = false;
};
/// initial * decay_rate^(step / decay_steps), the exponent floored when staircase.
inline learning_rate exponential_decay(exponential_decay_options o) {
  FG_CHECK(o.decay_steps > 0, value_error, "fg::optimizers::exponential_decay: decay_steps must be positive, got ",
           o.decay_steps);
  return learning_rate([o](std::int64_t step) {
    double p = static_cast<double>(step) / o.decay_steps;
    if (o.staircase) p = std::floor(p);
    return o.initial_learning_rate * std::pow(o.decay_rate, p);
  });
}

/// values[0] up to boundaries[0] (inclusive), values[i] up to boundaries[i], then the last value.
inline learning_rate piecewise_constant_decay(std::vector<std::int64_t> boundaries, std::vector<double> values) {
  FG_CHECK(values.size() == boundaries.size() + 1, value_error, "fg::optimizers::piecewise_constant_decay: ",
           values.size(), " values for ", boundaries.size(), " boundaries (one more value than boundaries)");
  FG_CHECK(std::is_sorted(boundaries.begin(), boundaries.end()), value_error,
           "fg::optimizers::piecewise_constant_decay: the boundaries must increase");
  return learning_rate([boundaries = std::move(boundaries), values = std::move(values)](std::int64_t step) {
    const auto i = std::lower_bound(boundaries.begin(), boundaries.end(), step) - boundaries.begin();
    return values[static_cast<std::size_t>(i)];
  });
}

struct cosine_decay_options {
  double initial_learning_rate = 0.01;
  double decay_steps = 1000;
  double alpha = 0.0;  ///< the floor, as a fraction of the initial rate
};
/// initial * ((1 - alpha) (1 + cos(pi min(step, decay_steps) / decay_steps)) / 2 + alpha).
inline learning_rate cosine_decay(cosine_decay_options o) {
  FG_CHECK(o.decay_steps > 0, value_error, "fg::optimizers::cosine_decay: decay_steps must be positive, got ",
           o.decay_steps);
  return learning_rate([o](std::int64_t step) {
    const double p = std::min(static_cast<double>(step), o.decay_steps) / o.decay_steps;
    return o.initial_learning_rate * ((1 - o.alpha) * 0.5 * (1 + std::cos(std::numbers::pi * p)) + o.alpha);
  });
}
}  // namespace fusegrad::optimizers
