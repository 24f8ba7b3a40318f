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
/// buffers, except where no tensor but the variable and its slots holds their buffers (as after
/// a non-persistent tape's gradient()), where it writes them in place. An update is not recorded
/// on tapes, as in TensorFlow. Variables are handles, so the ops take them by value.
/// On a GPU the pass is one device kernel (eval/device_training.hpp) writing new buffers on the
/// GPU, which are then assigned as on the host (docs/device.md).

#include <algorithm>
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

/// The step in place (Note [variable values]): true when var and every slot held their buffers
/// alone, were distinct and on the host, so the pass wrote them where they are.
template <class Rule, class T, std::size_t S>
bool apply_in_place(const Rule& rule, variable<T>& var, const tensor<T>& grad,
                    const std::array<variable<T>*, S>& slots) {
  if constexpr (S > 0)
    for (std::size_t k = 0; k < S; ++k) {
      if (slots[k]->id() == var.id()) return false;
      for (std::size_t j = 0; j < k; ++j)
        if (slots[j]->id() == slots[k]->id()) return false;
    }
  if (grad.device() != fg::device::cpu()) return false;
  T* w = nullptr;
  std::array<T*, S> s{};
  std::array<const T*, S> s_in{};
  // Each slot's lock is taken inside the previous one's; the pass runs holding them all.
  auto lock_from = [&](auto& self, std::size_t k) -> bool {
    if (k == S) {
      std::copy(s.begin(), s.end(), s_in.begin());
      host::apply_update(rule, var.shape().elements(), grad.data(), w, w, s_in, s);
      return true;
    }
    if constexpr (S > 0)
      return slots[k]->update_unshared([&](T* p) {
        s[k] = p;
        return self(self, k + 1);
      });
    return false;
  };
  return var.update_unshared([&](T* p) {
    w = p;
    return lock_from(lock_from, 0);
  });
}

/// One step of `rule` over var and its slots (Note [training updates]): checked first, then one
/// pass, in place where nothing else holds the buffers (apply_in_place), else into new buffers
/// on the variable's device (host::apply_update on the host, one device kernel on a GPU:
/// device_eval::run_training) followed by the assignments, which cannot fail.
template <class Rule, class T, class... S>
void apply_rule(const char* op, const Rule& rule, variable<T>& var, const tensor<T>& grad, S&... slots) {
  check_training(op, var, grad, slots...);
  if (apply_in_place(rule, var, grad, std::array<variable<T>*, sizeof...(S)>{&slots...})) return;
  const tensor<T> w = var.peek();
  const fg::device d = w.device();
  const std::array<tensor<T>, sizeof...(S)> s{slots.peek()...};
  tensor<T> w_out(w.shape(), d);
  std::array<tensor<T>, sizeof...(S)> s_out;
  std::array<const T*, sizeof...(S)> s_in{};
  std::array<T*, sizeof...(S)> s_to{};
  for (std::size_t k = 0; k < sizeof...(S); ++k) {
    s_out[k] = tensor<T>(w.shape(), d);
    s_in[k] = s[k].data();
    s_to[k] = s_out[k].buffer()->data;
  }
  if (d.is_gpu()) device_eval::run_training(rule, w.size(), grad.data(), w.data(), w_out.buffer()->data, s_in, s_to, d);
  else host::apply_update(rule, w.size(), grad.data(), w.data(), w_out.buffer()->data, s_in, s_to);
  std::size_t k = 0;
  ((slots.assign(s_out[k]), ++k), ...);
  var.assign(w_out);
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

/// The training ops on float32 and float64 variables, compiled once in libfusegrad in package
/// mode (Note [shared layer code], nn/activations.hpp; src/nn.cpp): P is `extern` here, empty
/// there. A device program (FUSEGRAD_DEVICE) compiles its own, with the device launcher.
#define FG_SHARED_TRAINING(P, T)                                                                                   \
  P template void apply_gradient_descent<T>(variable<T>, double, const tensor<T>&);                                \
  P template void apply_keras_momentum<T>(variable<T>, variable<T>, const tensor<T>&, const keras_momentum_step&); \
  P template void apply_adam<T>(variable<T>, variable<T>, variable<T>, const tensor<T>&, const adam_step&);        \
  P template void apply_adam_with_amsgrad<T>(variable<T>, variable<T>, variable<T>, variable<T>, const tensor<T>&, \
                                             const adam_step&);                                                    \
  P template void apply_rms_prop<T>(variable<T>, variable<T>, const tensor<T>&, const rms_prop_step&);             \
  P template void apply_rms_prop<T>(variable<T>, variable<T>, variable<T>, const tensor<T>&, const rms_prop_step&); \
  P template void apply_centered_rms_prop<T>(variable<T>, variable<T>, variable<T>, variable<T>, const tensor<T>&, \
                                             const rms_prop_step&);                                                \
  P template void apply_adagrad_v2<T>(variable<T>, variable<T>, const tensor<T>&, const adagrad_step&);
#if defined(FUSEGRAD_SEPARATE_ENGINES) && !defined(FUSEGRAD_DEVICE)
FG_SHARED_TRAINING(extern, float)
FG_SHARED_TRAINING(extern, double)
#endif
}  // namespace fusegrad
