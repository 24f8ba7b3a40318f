#pragma once
/// \file fg::optimizers::adagrad: Keras' Adagrad (slot "accumulator", starting at
/// initial_accumulator_value).

#include "optimizer.hpp"

namespace fusegrad::optimizers {

/// Adagrad's hyperparameters (Keras' defaults) and what every optimizer takes.
struct adagrad_options {
  optimizers::learning_rate learning_rate = 0.001;
  double initial_accumulator_value = 0.1, epsilon = 1e-7;
  std::optional<double> clipnorm = {}, global_clipnorm = {}, clipvalue = {};
  std::string name = "adagrad";
};

class adagrad : public optimizer_of<adagrad> {
 public:
  explicit adagrad(adagrad_options o = {})
      : optimizer_of(o.name, o.learning_rate, {o.clipnorm, o.global_clipnorm, o.clipvalue}), o_(std::move(o)) {
    FG_CHECK(o_.initial_accumulator_value >= 0, value_error,
             "fg::optimizers::adagrad: initial_accumulator_value must be at least 0, got ", o_.initial_accumulator_value);
  }

 private:
  friend optimizer_of<adagrad>;
  template <class T>
  void step(const variable<T>& var, const tensor<T>& g, double lr) {
    apply_adagrad_v2(var, slot(var, "accumulator", o_.initial_accumulator_value), g,
                     {.learning_rate = lr, .epsilon = o_.epsilon});
  }
  adagrad_options o_;
};
}  // namespace fusegrad::optimizers
