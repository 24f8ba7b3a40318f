#pragma once
/// \file Keras' flatten and reshape layers: the batch axis kept, the others flattened or
/// reshaped (one target dimension may be -1). No variables, no copy.

#include <string>
#include <vector>

#include "../eager/reshape.hpp"
#include "layer.hpp"

namespace fusegrad::nn {

/// (batch, ...) to (batch, the product of the rest).
class flatten : public layer_of<flatten> {
 public:
  explicit flatten(std::string name = "flatten") : layer_of(std::move(name)) {}
  std::string type_name() const override { return "Flatten"; }
  template <class T>
  tensor<T> forward(const tensor<T>& x, bool /*training*/) {
    FG_CHECK(x.shape().rank() >= 1, shape_error, "fg::nn::flatten '", name(), "': needs a batch axis, got a scalar");
    const long batch = static_cast<long>(x.shape()[0]);
    return fusegrad::reshape(x, {batch, batch == 0 ? 0L : static_cast<long>(x.size()) / batch});
  }
};

/// (batch, ...) to (batch, target...), target's elements as many as the input's per sample.
class reshape : public layer_of<reshape> {
 public:
  explicit reshape(std::vector<long> target_shape, std::string name = "reshape")
      : layer_of(std::move(name)), target_(std::move(target_shape)) {}
  std::string type_name() const override { return "Reshape"; }
  template <class T>
  tensor<T> forward(const tensor<T>& x, bool /*training*/) {
    FG_CHECK(x.shape().rank() >= 1, shape_error, "fg::nn::reshape '", name(), "': needs a batch axis, got a scalar");
    std::vector<long> dims{static_cast<long>(x.shape()[0])};
    dims.insert(dims.end(), target_.begin(), target_.end());
    return fusegrad::reshape(x, dims);
  }

 private:
  std::vector<long> target_;
};
}  // namespace fusegrad::nn
