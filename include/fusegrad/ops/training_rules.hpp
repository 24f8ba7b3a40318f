#pragma once
/// \file The rules of the training ops (eager/training.hpp): how one element of a variable and
/// of its slots moves given its gradient, once for the host loop and a device functor
/// (`__host__ __device__`). Note [training updates]: each rule is a struct of the step's
/// scalars (learning rate, decay factors, the bias corrections of this step) whose call operator
/// takes one element of the gradient, the variable and each slot, by reference, and updates
/// them in place; an evaluator applies it to every element in one pass (eval/host_training.hpp),
/// so a variable's update reads the gradient, the variable and its slots once and writes the
/// variable and its slots once. The call operator is a template over the element: the host loop
/// also calls it with SIMD batches (the step's scalars stay T), so a choice per element is
/// written with detail::larger, never with `?:`. The formulas and their order of operations are
/// Keras 3's (keras/src/optimizers), in the variable's element type; a factor that Keras computes
/// from Python floats, such as 1 - beta_1, is computed in double by the caller and rounded once, as
/// Keras rounds it.

#include <cmath>
#include <type_traits>

#include "../core/config.hpp"

namespace fusegrad::ops {
namespace detail {
/// The larger of a and b, b where either is NaN; for a SIMD batch, its elementwise max (found by
/// argument-dependent lookup), which keeps the same rule.
template <class V>
FG_HD V larger(const V& a, const V& b) {
  if constexpr (std::is_arithmetic_v<V>) return a > b ? a : b;
  else return max(a, b);
}
}  // namespace detail

/// var -= lr * g (tf.raw_ops.ApplyGradientDescent; Keras' SGD without momentum).
template <class T>
struct gradient_descent_rule {
  static constexpr int slots = 0;
  T lr;
  template <class V>
  FG_HD void operator()(V g, V& w) const { w -= lr * g; }
};

/// Keras' SGD with momentum: m = momentum * m - lr * g, then w += m, or with Nesterov's
/// correction w += momentum * m - lr * g.
template <class T>
struct momentum_rule {
  static constexpr int slots = 1;
  T lr, momentum;
  bool nesterov;
  template <class V>
  FG_HD void operator()(V g, V& w, V& m) const {
    m = momentum * m - lr * g;
    if (nesterov) w += momentum * m - lr * g;
    else w += m;
  }
};

/// Keras' Adam: m += (g - m) (1 - beta_1); v += (g^2 - v) (1 - beta_2);
/// w -= m alpha / (sqrt(v) + epsilon), alpha = lr sqrt(1 - beta_2^t) / (1 - beta_1^t) computed
/// once per step (the bias corrections). AdamW's decoupled weight decay, w = w - w weight_decay lr
/// (Keras' order of operations), comes first; weight_decay is 0 for Adam.
template <class T>
struct adam_rule {
  static constexpr int slots = 2;
  T alpha, one_minus_beta_1, one_minus_beta_2, epsilon, lr, weight_decay;
  template <class V>
  FG_HD void operator()(V g, V& w, V& m, V& v) const {
    using std::sqrt;
    if (weight_decay != T(0)) w = w - w * weight_decay * lr;
    m += (g - m) * one_minus_beta_1;
    v += (g * g - v) * one_minus_beta_2;
    w -= (m * alpha) / (sqrt(v) + epsilon);
  }
};

/// Adam with amsgrad: the denominator takes the largest v seen so far (slot v_hat).
template <class T>
struct adam_amsgrad_rule {
  static constexpr int slots = 3;
  T alpha, one_minus_beta_1, one_minus_beta_2, epsilon, lr, weight_decay;
  template <class V>
  FG_HD void operator()(V g, V& w, V& m, V& v, V& v_hat) const {
    using std::sqrt;
    if (weight_decay != T(0)) w = w - w * weight_decay * lr;
    m += (g - m) * one_minus_beta_1;
    v += (g * g - v) * one_minus_beta_2;
    v_hat = detail::larger(v_hat, v);
    w -= (m * alpha) / (sqrt(v_hat) + epsilon);
  }
};

/// Keras' RMSprop, uncentered and without momentum: v = rho v + (1 - rho) g^2;
/// w -= lr g / sqrt(v + epsilon).
template <class T>
struct rms_prop_rule {
  static constexpr int slots = 1;
  T lr, rho, one_minus_rho, epsilon;
  template <class V>
  FG_HD void operator()(V g, V& w, V& v) const {
    using std::sqrt;
    v = rho * v + one_minus_rho * (g * g);
    w -= (lr * g) / sqrt(v + epsilon);
  }
};

/// RMSprop with momentum: the increment accumulates in slot p (p = momentum p + increment).
template <class T>
struct rms_prop_momentum_rule {
  static constexpr int slots = 2;
  T lr, rho, one_minus_rho, epsilon, momentum;
  template <class V>
  FG_HD void operator()(V g, V& w, V& v, V& p) const {
    using std::sqrt;
    v = rho * v + one_minus_rho * (g * g);
    p = momentum * p + (lr * g) / sqrt(v + epsilon);
    w -= p;
  }
};

/// Centered RMSprop: the variance v - a^2 in place of v, a the running mean of g; momentum as
/// above (0: none).
template <class T>
struct rms_prop_centered_rule {
  static constexpr int slots = 3;
  T lr, rho, one_minus_rho, epsilon, momentum;
  template <class V>
  FG_HD void operator()(V g, V& w, V& v, V& a, V& p) const {
    using std::sqrt;
    v = rho * v + one_minus_rho * (g * g);
    a = rho * a + one_minus_rho * g;
    const V increment = (lr * g) / sqrt(v - a * a + epsilon);
    if (momentum > T(0)) {
      p = momentum * p + increment;
      w -= p;
    } else {
      w -= increment;
    }
  }
};

/// Keras' Adagrad: s += g^2; w -= lr g / sqrt(s + epsilon).
template <class T>
struct adagrad_rule {
  static constexpr int slots = 1;
  T lr, epsilon;
  template <class V>
  FG_HD void operator()(V g, V& w, V& s) const {
    using std::sqrt;
    s += g * g;
    w -= (lr * g) / sqrt(s + epsilon);
  }
};
}  // namespace fusegrad::ops
