#pragma once
/// \file fg::dropout (tf.nn.dropout): each element kept with probability 1 - rate and scaled by
/// 1 / (1 - rate), or set to 0. The mask comes from fg::random's counter-based generator, so a
/// seed gives the same mask on every run, platform and device (Note [random numbers],
/// core/random.hpp); the gradient flows through the kept elements, scaled alike.

#include <cstdint>

#include "../core/random.hpp"
#include "../ops/binary.hpp"
#include "evaluate.hpp"

namespace fusegrad {
namespace eager {
inline void check_dropout_rate(double rate) {
  FG_CHECK(rate >= 0 && rate < 1, value_error,
           "fg::dropout: rate must be in [0, 1) (the fraction of elements set to 0); got ", rate);
}

/// x with the elements whose uniform draw u is below rate set to 0 and the others scaled by
/// 1 / (1 - rate), as TensorFlow computes it: where(u >= rate, x * scale, 0), one fused pass.
template <class X, class T = value_type_of<X>>
tensor<T> apply_dropout(const X& x, double rate, const tensor<T>& u) {
  const auto v = ops::to_operand(x);
  const tensor<T> draws = u.to(dispatch::common_device(v));
  return where(draws >= static_cast<T>(rate), v * static_cast<T>(1 / (1 - rate)), T(0));
}
}  // namespace eager

/// Sets each element of x to 0 with probability rate and scales the others by 1 / (1 - rate)
/// (tf.nn.dropout); the same seed gives the same mask. A rate of 0 returns x itself.
template <tensor_like X>
tensor<value_type_of<X>> dropout(const X& x, double rate, std::uint64_t seed) {
  using T = value_type_of<X>;
  static_assert(std::floating_point<T>,
                "fg::dropout needs a floating-point tensor (it scales x); convert with fg::cast<float>(x)");
  eager::check_dropout_rate(rate);
  if (rate == 0) return eval(x);
  return eager::apply_dropout(x, rate, random::uniform<T>(ops::to_operand(x).shape(), seed));
}

/// fg::dropout with the mask drawn from this thread's generator (fg::random::set_seed).
template <tensor_like X>
tensor<value_type_of<X>> dropout(const X& x, double rate) {
  using T = value_type_of<X>;
  static_assert(std::floating_point<T>,
                "fg::dropout needs a floating-point tensor (it scales x); convert with fg::cast<float>(x)");
  eager::check_dropout_rate(rate);
  if (rate == 0) return eval(x);
  return eager::apply_dropout(x, rate, random::uniform<T>(ops::to_operand(x).shape()));
}
}  // namespace fusegrad
