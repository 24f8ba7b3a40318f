#pragma once
/// \file The training ops: one optimizer step of one variable, in one pass (Note [training
/// updates] in ops/training_rules.hpp), with TensorFlow's names for its resource-apply kernels
/// and Keras 3's formulas (the optimizers of fg::optimizers call them; a user may too):
/// apply_gradient_descent, apply_keras_momentum, apply_adam, apply_adam_with_amsgrad,
/// apply_rms_prop, apply_centered_rms_prop, apply_adagrad_v2. Each takes the variable, its slot
/// variables (the optimizer's state, of the variable's shape) and the gradient, checks them all
/// before it changes anything (an error names the op, the variable and the shapes or devices),
/// computes the new values in one pass, then assigns the variable and the slots. The values a
/// reader took before the step stay as they were (Note [variable values]): the step writes new
/// buffers. An update is not recorded on tapes, as in TensorFlow. Variables are handles, so the
/// ops take them by value.
/// On a GPU the step runs on host copies of its operands for now (docs/device.md).

#include <array>
#include <cmath>
#include <cstdint>
#include <tuple>
#include <type_traits>

#include "../autodiff/variable.hpp"
#include "../eval/device_hooks.hpp"
#include "../eval/host_training.hpp"
#include "../ops/training_rules.hpp"

namespace fusegrad {

/// The hyperparameters of one Adam step (Keras' defaults); `step` counts from 1 (Keras'
/// iterations + 1), for the bias corrections.
struct adam_step {
  double learning_rate = 0.001;
  double beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-7;
  double weight_decay = 0;  ///< AdamW's decoupled decay (w -= w * weight_decay * learning_rate)
  std::int64_t step = 1;
};
/// The hyperparameters of one step of Keras' SGD with momentum.
struct keras_momentum_step {
  double learning_rate = 0.01, momentum = 0.0;
  bool nesterov = false;
};
/// The hyperparameters of one RMSprop step (Keras' defaults).
struct rms_prop_step {
  double learning_rate = 0.001, rho = 0.9, momentum = 0.0, epsilon = 1e-7;
};
/// The hyperparameters of one Adagrad step (Keras' defaults).
struct adagrad_step {
  double learning_rate = 0.001, epsilon = 1e-7;
};

namespace eager {
/// Checks a training op's operands: the gradient and every slot defined, of the variable's shape,
/// on its device.
template <class T, class... S>
void check_training(const char* op, const variable<T>& var, const tensor<T>& grad, const S&... slots) {
  static_assert(std::is_floating_point_v<T>, "fg::apply_*: training ops update float or double variables");
  FG_CHECK(grad.defined(), value_error, "fg::", op, ": the gradient of variable '", var.name(),
           "' is undefined (an unconnected gradient?)");
  FG_CHECK(grad.shape() == var.shape(), shape_error, "fg::", op, ": variable '", var.name(), "' has shape ",
           var.shape(), " but its gradient has shape ", grad.shape());
  const fg::device d = var.peek().device();
  dispatch::check_same_device(op, d, grad.device());
  (
      [&](const variable<T>& s) {
        FG_CHECK(s.shape() == var.shape(), shape_error, "fg::", op, ": slot '", s.name(), "' has shape ", s.shape(),
                 " but variable '", var.name(), "' has shape ", var.shape());
        dispatch::check_same_device(op, d, s.peek().device());
      }(slots),
      ...);
}

/// One step of `rule` over var and its slots (Note [training updates]): checked first, then one
/// pass into new buffers, then the assignments, which cannot fail.
template <class Rule, class T, class... S>
void apply_rule(const char* op, const Rule& rule, variable<T>& var, const tensor<T>& grad, S&... slots) {
  check_training(op, var, grad, slots...);
  const tensor<T> w = var.peek();
  const fg::device d = w.device();
  const tensor<T> g = dispatch::host_operand(grad, op), wh = dispatch::host_operand(w, op);
  const std::array<tensor<T>, sizeof...(S)> sh{dispatch::host_operand(slots.peek(), op)...};
  tensor<T> w_out(w.shape(), fg::device::cpu());
  std::array<tensor<T>, sizeof...(S)> s_out;
  std::array<const T*, sizeof...(S)> s_in{};
  std::array<T*, sizeof...(S)> s_to{};
  for (std::size_t k = 0; k < sizeof...(S); ++k) {
    s_out[k] = tensor<T>(w.shape(), fg::device::cpu());
    s_in[k] = sh[k].data();
    s_to[k] = s_out[k].buffer()->data;
  }
  host::apply_update(rule, w.size(), g.data(), wh.data(), w_out.buffer()->data, s_in, s_to);
  std::size_t k = 0;
  ((slots.assign(s_out[k].to(d)), ++k), ...);
  var.assign(w_out.to(d));
}
/// x rounded once to T: a factor Keras computes from Python floats (Note [training updates]).
template <class T>
T keras_factor(double x) {
  return static_cast<T>(x);
}
/// Adam's alpha for this step, in T as Keras computes it: lr sqrt(1 - beta_2^t) / (1 - beta_1^t).
template <class T>
T adam_alpha(const adam_step& s) {
  using std::pow, std::sqrt;
  const T t = static_cast<T>(s.step);
  const T b1p = pow(static_cast<T>(s.beta_1), t), b2p = pow(static_cast<T>(s.beta_2), t);
  return static_cast<T>(s.learning_rate) * sqrt(T(1) - b2p) / (T(1) - b1p);
}
/// The scalars of one Adam step as Rule (adam_rule or adam_amsgrad_rule, which share them),
/// after checking the step count.
template <class Rule, class T = decltype(Rule::alpha)>
Rule adam_rule_for(const char* op, const adam_step& s) {
  FG_CHECK(s.step >= 1, value_error, "fg::", op, ": step counts from 1 (got ", s.step, ")");
  return Rule{adam_alpha<T>(s),         keras_factor<T>(1 - s.beta_1),     keras_factor<T>(1 - s.beta_2),
              static_cast<T>(s.epsilon), static_cast<T>(s.learning_rate), static_cast<T>(s.weight_decay)};
}
}  // namespace eager

/// var -= learning_rate * grad.
template <class T>
void apply_gradient_descent(variable<T> var, double learning_rate, const tensor<T>& grad) {
  eager::apply_rule("apply_gradient_descent", ops::gradient_descent_rule<T>{static_cast<T>(learning_rate)}, var, grad);
}
/// Keras' SGD with momentum: accum = momentum accum - lr grad; var += accum (or, Nesterov,
/// var += momentum accum - lr grad).
template <class T>
void apply_keras_momentum(variable<T> var, variable<T> accum, const tensor<T>& grad, const keras_momentum_step& s) {
  eager::apply_rule("apply_keras_momentum",
                    ops::momentum_rule<T>{static_cast<T>(s.learning_rate), static_cast<T>(s.momentum), s.nesterov}, var,
                    grad, accum);
}
/// One Adam (or, with weight_decay, AdamW) step: slots m and v.
template <class T>
void apply_adam(variable<T> var, variable<T> m, variable<T> v, const tensor<T>& grad, const adam_step& s) {
  eager::apply_rule("apply_adam", eager::adam_rule_for<ops::adam_rule<T>>("apply_adam", s), var, grad, m, v);
}
/// One Adam step with amsgrad: slots m, v and v_hat (the largest v so far).
template <class T>
void apply_adam_with_amsgrad(variable<T> var, variable<T> m, variable<T> v, variable<T> v_hat,
                             const tensor<T>& grad, const adam_step& s) {
  eager::apply_rule("apply_adam_with_amsgrad",
                    eager::adam_rule_for<ops::adam_amsgrad_rule<T>>("apply_adam_with_amsgrad", s), var, grad, m, v,
                    v_hat);
}
/// One RMSprop step without momentum: slot v (the mean square).
template <class T>
void apply_rms_prop(variable<T> var, variable<T> v, const tensor<T>& grad, const rms_prop_step& s) {
  const ops::rms_prop_rule<T> rule{static_cast<T>(s.learning_rate), static_cast<T>(s.rho),
                                   eager::keras_factor<T>(1 - s.rho), static_cast<T>(s.epsilon)};
  eager::apply_rule("apply_rms_prop", rule, var, grad, v);
}
/// One RMSprop step with momentum: slots v (the mean square) and p (the momentum).
template <class T>
void apply_rms_prop(variable<T> var, variable<T> v, variable<T> p, const tensor<T>& grad, const rms_prop_step& s) {
  const ops::rms_prop_momentum_rule<T> rule{static_cast<T>(s.learning_rate), static_cast<T>(s.rho),
                                            eager::keras_factor<T>(1 - s.rho), static_cast<T>(s.epsilon),
                                            static_cast<T>(s.momentum)};
  eager::apply_rule("apply_rms_prop", rule, var, grad, v, p);
}
/// One centered RMSprop step: slots v (the mean square), a (the mean gradient) and p (the
/// momentum, unused when momentum is 0).
template <class T>
void apply_centered_rms_prop(variable<T> var, variable<T> v, variable<T> a, variable<T> p, const tensor<T>& grad,
                             const rms_prop_step& s) {
  const ops::rms_prop_centered_rule<T> rule{static_cast<T>(s.learning_rate), static_cast<T>(s.rho),
                                            eager::keras_factor<T>(1 - s.rho), static_cast<T>(s.epsilon),
                                            static_cast<T>(s.momentum)};
  eager::apply_rule("apply_centered_rms_prop", rule, var, grad, v, a, p);
}
/// One Adagrad step (TensorFlow's AdagradV2, with epsilon): slot s (the sum of squares).
template <class T>
void apply_adagrad_v2(variable<T> var, variable<T> s, const tensor<T>& grad, const adagrad_step& p) {
  eager::apply_rule("apply_adagrad_v2", ops::adagrad_rule<T>{static_cast<T>(p.learning_rate), static_cast<T>(p.epsilon)},
                    var, grad, s);
}
}  // namespace fusegrad
