#pragma once
/// \file fg::optimizers::adam and adamw: Keras' Adam (slots "momentum" and "velocity", and
/// "velocity_hat" with amsgrad) and AdamW (Adam with decoupled weight decay, applied in the same
/// pass).

#include "optimizer.hpp"

namespace fusegrad::optimizers {

/// Adam's hyperparameters (Keras' defaults) and what every optimizer takes.
struct adam_options {
  optimizers::learning_rate learning_rate = 0.001;
  double beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-7;
  bool amsgrad = false;
  std::optional<double> clipnorm = {}, global_clipnorm = {}, clipvalue = {};
  std::string name = "adam";
};
/// AdamW's hyperparameters (Keras' defaults).
struct adamw_options {
  optimizers::learning_rate learning_rate = 0.001;
  double weight_decay = 0.004;
  double beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-7;
  bool amsgrad = false;
  std::optional<double> clipnorm = {}, global_clipnorm = {}, clipvalue = {};
  std::string name = "adamw";
};

/// Adam, and AdamW when weight_decay is not 0.
class adam : public optimizer_of<adam> {
 public:
  explicit adam(adam_options o = {})
      : adam(o.name, o.learning_rate, {o.clipnorm, o.global_clipnorm, o.clipvalue}, o.beta_1, o.beta_2, o.epsilon,
             o.amsgrad, 0.0) {}

 protected:
  adam(std::string name, learning_rate rate, clipping clip, double beta_1, double beta_2, double epsilon, bool amsgrad,
       double weight_decay)
      : optimizer_of(std::move(name), std::move(rate), clip),
        beta_1_(beta_1), beta_2_(beta_2), epsilon_(epsilon), weight_decay_(weight_decay), amsgrad_(amsgrad) {
    FG_CHECK(beta_1 >= 0 && beta_1 < 1 && beta_2 >= 0 && beta_2 < 1, value_error, "fg::optimizers::", this->name(),
             ": beta_1 and beta_2 must be in [0, 1), got ", beta_1, " and ", beta_2);
    FG_CHECK(weight_decay >= 0, value_error, "fg::optimizers::", this->name(), ": weight_decay must be at least 0, got ",
             weight_decay);
  }

 private:
  friend optimizer_of<adam>;
  template <class T>
  void step(const variable<T>& var, const tensor<T>& g, double lr) {
    const adam_step s{.learning_rate = lr, .beta_1 = beta_1_, .beta_2 = beta_2_, .epsilon = epsilon_,
                      .weight_decay = weight_decay_, .step = iterations() + 1};
    const variable<T> m = slot(var, "momentum"), v = slot(var, "velocity");
    if (amsgrad_) apply_adam_with_amsgrad(var, m, v, slot(var, "velocity_hat"), g, s);
    else apply_adam(var, m, v, g, s);
  }
  double beta_1_, beta_2_, epsilon_, weight_decay_;
  bool amsgrad_;
};

/// AdamW: Adam whose step first decays each variable, w -= w * weight_decay * learning_rate.
class adamw : public adam {
 public:
  explicit adamw(adamw_options o = {})
      : adam(o.name, o.learning_rate, {o.clipnorm, o.global_clipnorm, o.clipvalue}, o.beta_1, o.beta_2, o.epsilon,
             o.amsgrad, o.weight_decay) {}
};
}  // namespace fusegrad::optimizers
