#pragma once
/// \file fg::nn::dropout and fg::nn::activation: Keras' Dropout (active only when called with
/// training = true; each call draws a new mask, from the layer's seed and its call count when
/// seeded, so a seeded run repeats) and Activation (an activation by Keras' name as a layer).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "../eager/dropout.hpp"
#include "activations.hpp"
#include "layer.hpp"

namespace fusegrad::nn {

struct dropout_options {
  std::optional<std::uint64_t> seed = {};
  std::string name = "dropout";
};

class dropout : public layer_of<dropout> {
 public:
  explicit dropout(double rate, dropout_options o = {})
      : layer_of(o.name), rate_(rate), seed_(o.seed), calls_(std::make_shared<std::uint64_t>(0)) {
    FG_CHECK(rate >= 0 && rate < 1, value_error, "fg::nn::dropout: rate must be in [0, 1), got ", rate);
  }
  std::string type_name() const override { return "Dropout"; }
  template <class T>
  tensor<T> forward(const tensor<T>& x, bool training) {
    if (!training || rate_ == 0) return x;
    if (seed_) return fusegrad::dropout(x, rate_, *seed_ + (*calls_)++);
    return fusegrad::dropout(x, rate_);
  }

 private:
  double rate_;
  std::optional<std::uint64_t> seed_;
  std::shared_ptr<std::uint64_t> calls_;  ///< shared by copies, as the layer is
};

class activation : public layer_of<activation> {
 public:
  explicit activation(const std::string& name_of_activation, std::string name = "activation")
      : layer_of(std::move(name)), act_(activations::by_name(name_of_activation, "activation")) {}
  std::string type_name() const override { return "Activation"; }
  template <class T>
  tensor<T> forward(const tensor<T>& x, bool /*training*/) {
    return activations::apply(act_, x);
  }

 private:
  activations::kind act_;
};
}  // namespace fusegrad::nn
