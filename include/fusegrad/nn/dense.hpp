#pragma once
/// \file fg::nn::dense: Keras' Dense, activation(x . kernel + bias) on the last axis of x (of
/// any rank at least 1). The kernel, of shape (input features, units), and the bias, of shape
/// (units), are made on the first call; a later call whose last dimension differs is an error
/// naming the layer and both shapes. kernel_regularizer and bias_regularizer add their terms to
/// the model's regularization losses (nn/regularizers.hpp). The bias add and the activation run
/// in one fused pass after the product, and their backward in one pass too.

#include <cstdint>
#include <string>

#include "../eager/linalg.hpp"
#include "../eager/reshape.hpp"
#include "activations.hpp"
#include "layer.hpp"

namespace fusegrad::nn {

/// Dense's options (Keras' defaults).
struct dense_options {
  std::string activation = "";  ///< Keras' name; "" or "linear": none
  bool use_bias = true;
  initializers::initializer kernel_initializer = "glorot_uniform";
  initializers::initializer bias_initializer = "zeros";
  regularizers::regularizer kernel_regularizer = {};  ///< none, or l1 / l2 / l1_l2 (Keras' names or objects)
  regularizers::regularizer bias_regularizer = {};
  std::string name = "dense";
};

class dense : public layer_of<dense> {
 public:
  /// A dense layer of `units` outputs.
  explicit dense(std::int64_t units, dense_options o = {})
      : layer_of(o.name), units_(units), act_(activations::by_name(o.activation, "dense")), o_(std::move(o)) {
    FG_CHECK(units > 0, value_error, "fg::nn::dense: units must be positive, got ", units);
  }
  std::string type_name() const override { return "Dense"; }
  std::int64_t units() const noexcept { return units_; }

  /// activation(x . kernel + bias); `training` is unused.
  template <class T>
  tensor<T> forward(const tensor<T>& x, bool /*training*/) {
    const fg::shape& s = x.shape();
    FG_CHECK(s.rank() >= 1, shape_error, "fg::nn::dense '", name(), "': needs input of rank at least 1, got shape ", s);
    const std::size_t in = s[s.rank() - 1];
    if (!built()) {
      add_weight<T>("kernel", {in, static_cast<std::size_t>(units_)}, o_.kernel_initializer, true,
                    o_.kernel_regularizer);
      if (o_.use_bias)
        add_weight<T>("bias", {static_cast<std::size_t>(units_)}, o_.bias_initializer, true, o_.bias_regularizer);
      set_built(s);
    }
    const variable<T> kernel = weight<T>(0);
    FG_CHECK(kernel.shape()[0] == in, shape_error, "fg::nn::dense '", name(), "': input of shape ", s,
             " has ", in, " features on its last axis, but the layer was built for input of shape ",
             built_input_shape(), " (", kernel.shape()[0], " features)");
    tensor<T> y;
    if (s.rank() == 2) {
      y = matmul(x, kernel);
    } else {
      fg::shape out = s;
      out[s.rank() - 1] = static_cast<std::size_t>(units_);
      y = fusegrad::reshape(matmul(fusegrad::reshape(x, {-1L, static_cast<long>(in)}), kernel), out);
    }
    if (!o_.use_bias) return activations::apply(act_, y);
    return activations::apply_biased(act_, y, weight<T>(1));
  }

 private:
  std::int64_t units_;
  activations::kind act_;
  dense_options o_;
};
}  // namespace fusegrad::nn
