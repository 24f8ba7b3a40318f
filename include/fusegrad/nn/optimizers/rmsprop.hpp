#pragma once
/// \file fg::optimizers::rmsprop: Keras' RMSprop (slot "velocity"; "momentum" when momentum is
/// not 0; "average_gradient" when centered).

#include "optimizer.hpp"

namespace fusegrad::optimizers {

/// RMSprop's hyperparameters (Keras' defaults) and what every optimizer takes.
struct rmsprop_options {
  optimizers::learning_rate learning_rate = 0.001;
  double rho = 0.9, momentum = 0.0, epsilon = 1e-7;
  bool centered = false;
  std::optional<double> clipnorm = {}, global_clipnorm = {}, clipvalue = {};
  std::string name = "rmsprop";
};

class rmsprop : public optimizer_of<rmsprop> {
 public:
  explicit rmsprop(rmsprop_options o = {})
      : optimizer_of(o.name, o.learning_rate, {o.clipnorm, o.global_clipnorm, o.clipvalue}), o_(std::move(o)) {
    FG_CHECK(o_.rho >= 0 && o_.rho < 1 && o_.momentum >= 0, value_error,
             "fg::optimizers::rmsprop: rho must be in [0, 1) and momentum at least 0, got ", o_.rho, " and ",
             o_.momentum);
  }

 private:
  friend optimizer_of<rmsprop>;
  template <class T>
  void step(const variable<T>& var, const tensor<T>& g, double lr) {
    const rms_prop_step s{.learning_rate = lr, .rho = o_.rho, .momentum = o_.momentum, .epsilon = o_.epsilon};
    const variable<T> v = slot(var, "velocity");
    if (o_.centered) apply_centered_rms_prop(var, v, slot(var, "average_gradient"), slot(var, "momentum"), g, s);
    else if (o_.momentum > 0) apply_rms_prop(var, v, slot(var, "momentum"), g, s);
    else apply_rms_prop(var, v, g, s);
  }
  rmsprop_options o_;
};
}  // namespace fusegrad::optimizers
