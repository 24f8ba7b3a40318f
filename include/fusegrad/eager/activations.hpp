#pragma once
/// \file Activation functions of tf.nn and Keras: leaky_relu, elu, selu, gelu, silu (swish),
/// relu6, softsign, hard_sigmoid. Each is a composite of elementwise primitives, so it fuses with
/// the expression around it and gets its gradient (of every order) from theirs; they return
/// lazy expressions, except gelu, whose form is chosen at run time.
/// Note [masked branches]: where a composite selects between branches, the branch that must not
/// be taken is kept finite (expm1(minimum(x, 0)), not expm1(x)): where's gradient sends 0 to the
/// unselected branch, and 0 times an infinite derivative (e^x for large x) would be NaN.
/// The selection conditions follow TensorFlow's kernels, so the derivative at a kink (x = 0)
/// is TensorFlow's one-sided choice.

#include "../ops/binary.hpp"
#include "evaluate.hpp"

namespace fusegrad {

/// x where x > 0, else alpha * x (tf.nn.leaky_relu).
template <tensor_like X>
auto leaky_relu(const X& x, double alpha = 0.2) {
  static_assert(std::floating_point<value_type_of<X>>,
                "fg::leaky_relu needs a floating-point tensor; convert with fg::cast<float>(x)");
  const auto v = ops::to_operand(x);
  return where(v > 0, v, v * alpha);
}

/// x where x >= 0, else e^x - 1 (tf.nn.elu).
template <tensor_like X>
auto elu(const X& x) {
  static_assert(std::floating_point<value_type_of<X>>,
                "fg::elu needs a floating-point tensor; convert with fg::cast<float>(x)");
  const auto v = ops::to_operand(x);
  return where(v < 0, expm1(minimum(v, 0)), v);  // Note [masked branches]
}

/// scale * x where x >= 0, else scale * alpha * (e^x - 1), with the self-normalising constants
/// of Klambauer et al. (tf.nn.selu).
template <tensor_like X>
auto selu(const X& x) {
  static_assert(std::floating_point<value_type_of<X>>,
                "fg::selu needs a floating-point tensor; convert with fg::cast<float>(x)");
  // TensorFlow's constants: scale, and scale * alpha rounded once.
  constexpr double scale = 1.0507009873554804934193349852946;
  constexpr double scale_alpha = 1.7580993408473768599402175208123;
  const auto v = ops::to_operand(x);
  return where(v < 0, scale_alpha * expm1(minimum(v, 0)), scale * v);  // Note [masked branches]
}

/// x * sigmoid(x) (tf.nn.silu).
template <tensor_like X>
auto silu(const X& x) {
  static_assert(std::floating_point<value_type_of<X>>,
                "fg::silu needs a floating-point tensor; convert with fg::cast<float>(x)");
  const auto v = ops::to_operand(x);
  return v * sigmoid(v);
}

/// Alias of fg::silu (tf.nn.swish).
template <tensor_like X>
auto swish(const X& x) { return silu(x); }

/// min(max(x, 0), 6) (tf.nn.relu6); its gradient is 0 at 0 and at 6, as TensorFlow's.
template <tensor_like X>
auto relu6(const X& x) {
  // The literal first: minimum sends ties to its first operand, so at x = 6 the gradient goes to it.
  return minimum(6, relu(x));
}

/// x / (1 + |x|) (tf.nn.softsign).
template <tensor_like X>
auto softsign(const X& x) {
  static_assert(std::floating_point<value_type_of<X>>,
                "fg::softsign needs a floating-point tensor; convert with fg::cast<float>(x)");
  const auto v = ops::to_operand(x);
  return v / (1 + abs(v));
}

/// relu6(x + 3) / 6: 0 below -3, 1 above 3, x / 6 + 1/2 between (Keras 3's hard_sigmoid, the
/// definition TensorFlow 2.21 uses; Keras 2 used max(0, min(1, 0.2 x + 0.5))).
template <tensor_like X>
auto hard_sigmoid(const X& x) {
  static_assert(std::floating_point<value_type_of<X>>,
                "fg::hard_sigmoid needs a floating-point tensor; convert with fg::cast<float>(x)");
  return relu6(ops::to_operand(x) + 3) / 6;
}

/// The Gaussian error linear unit x * P(N(0, 1) <= x) (tf.nn.gelu): exactly,
/// 0.5 x erfc(-x / sqrt(2)), or with `approximate` the tanh form
/// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
template <tensor_like X>
tensor<value_type_of<X>> gelu(const X& x, bool approximate = false) {
  static_assert(std::floating_point<value_type_of<X>>,
                "fg::gelu needs a floating-point tensor; convert with fg::cast<float>(x)");
  const auto v = ops::to_operand(x);
  // TensorFlow's arithmetic: erfc(-z) rather than 1 + erf(z), which cancels to 0 for x below about -6.
  if (!approximate) return 0.5 * v * erfc(-v * 0.7071067811865476);
  // 0.5 (1 + tanh(z)) written as sigmoid(2 z): the same function, whose derivative is one
  // primitive (sigmoid_derivative), where tanh's repeats the tanh; with it a fused backward over
  // this expression had 70 leaves, too many for a device kernel's parameters (Note [device
  // parameters]).
  return v * sigmoid(1.5957691216057308 * (v + 0.044715 * (v * v * v)));
}
}  // namespace fusegrad
