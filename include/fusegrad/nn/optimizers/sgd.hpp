#pragma once
/// \file fg::optimizers::sgd: Keras' SGD, with momentum and Nesterov's correction; one slot,
/// "momentum", when momentum is not 0.

#include "optimizer.hpp"

namespace fusegrad::optimizers {

/// SGD's hyperparameters (Keras' defaults) and what every optimizer takes.
struct sgd_options {
  optimizers::learning_rate learning_rate = 0.01;
  double momentum = 0.0;
  bool nesterov = false;
  std::optional<double> clipnorm = {}, global_clipnorm = {}, clipvalue = {};
  std::string name = "sgd";
};

class sgd : public optimizer_of<sgd> {
 public:
  explicit sgd(sgd_options o = {})
      : optimizer_of(o.name, o.learning_rate, {o.clipnorm, o.global_clipnorm, o.clipvalue}), o_(std::move(o)) {
    FG_CHECK(o_.momentum >= 0 && o_.momentum <= 1, value_error,
             "fg::optimizers::sgd: momentum must be in [0, 1], got ", o_.momentum);
  }

 private:
  friend optimizer_of<sgd>;
  template <class T>
  void step(const variable<T>& var, const tensor<T>& g, double lr) {
    if (o_.momentum == 0) return apply_gradient_descent(var, lr, g);
    apply_keras_momentum(var, slot(var, "momentum"), g, {.learning_rate = lr, .momentum = o_.momentum, .nesterov = o_.nesterov});
  }
  sgd_options o_;
};
}  // namespace fusegrad::optimizers
