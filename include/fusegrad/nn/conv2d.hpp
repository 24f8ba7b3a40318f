#pragma once
/// \file fg::nn::conv2d: Keras' Conv2D on NHWC input: activation(conv2d(x, kernel) + bias), the
/// kernel of shape (kernel height, kernel width, input channels, filters) and the bias of shape
/// (filters) made on the first call. Padding "valid" or "same" (TensorFlow's rule); the bias add
/// and the activation run in one fused pass after the convolution. kernel_regularizer and
/// bias_regularizer add their terms to the model's regularization losses (nn/regularizers.hpp).

#include <cctype>
#include <cstdint>
#include <string>

#include "../eager/conv.hpp"
#include "activations.hpp"
#include "layer.hpp"

namespace fusegrad::nn {

/// Conv2D's options (Keras' defaults).
struct conv2d_options {
  size2d strides = 1;
  std::string padding = "valid";  ///< "valid" or "same"
  size2d dilation_rate = 1;
  std::string activation = "";
  bool use_bias = true;
  initializers::initializer kernel_initializer = "glorot_uniform";
  initializers::initializer bias_initializer = "zeros";
  regularizers::regularizer kernel_regularizer = {};  ///< none, or l1 / l2 / l1_l2 (Keras' names or objects)
  regularizers::regularizer bias_regularizer = {};
  std::string name = "conv2d";
};

/// Keras' padding names, "valid" and "same" (either case), as tf.nn's.
inline std::string keras_padding(const std::string& p, const std::string& layer) {
  std::string u;
  for (char c : p) u += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  FG_CHECK(u == "VALID" || u == "SAME", value_error, "fg::nn::", layer, ": padding must be \"valid\" or \"same\", got \"",
           p, "\"");
  return u;
}

class conv2d : public layer_of<conv2d> {
 public:
  /// A convolution of `filters` output channels over windows of kernel_size.
  conv2d(std::int64_t filters, size2d kernel_size, conv2d_options o = {})
      : layer_of(o.name), filters_(filters), kernel_(kernel_size), padding_(keras_padding(o.padding, "conv2d")),
        act_(activations::by_name(o.activation, "conv2d")), o_(std::move(o)) {
    FG_CHECK(filters > 0 && kernel_size.h > 0 && kernel_size.w > 0, value_error,
             "fg::nn::conv2d: filters and kernel_size must be positive, got ", filters, " and (", kernel_size.h, ", ",
             kernel_size.w, ")");
  }
  std::string type_name() const override { return "Conv2D"; }

  template <class T>
  tensor<T> forward(const tensor<T>& x, bool /*training*/) {
    const fg::shape& s = x.shape();
    FG_CHECK(s.rank() == 4, shape_error, "fg::nn::conv2d '", name(),
             "': needs input of rank 4 (batch, height, width, channels), got shape ", s);
    const std::size_t in = s[3];
    if (!built()) {
      add_weight<T>("kernel",
                    {static_cast<std::size_t>(kernel_.h), static_cast<std::size_t>(kernel_.w), in,
                     static_cast<std::size_t>(filters_)},
                    o_.kernel_initializer, true, o_.kernel_regularizer);
      if (o_.use_bias)
        add_weight<T>("bias", {static_cast<std::size_t>(filters_)}, o_.bias_initializer, true, o_.bias_regularizer);
      set_built(s);
    }
    const variable<T> kernel = weight<T>(0);
    FG_CHECK(kernel.shape()[2] == in, shape_error, "fg::nn::conv2d '", name(), "': input of shape ", s, " has ", in,
             " channels, but the layer was built for input of shape ", built_input_shape(), " (", kernel.shape()[2],
             " channels)");
    const tensor<T> y = fusegrad::conv2d(x, kernel, o_.strides, padding_, o_.dilation_rate);
    if (!o_.use_bias) return activations::apply(act_, y);
    return activations::apply_biased(act_, y, weight<T>(1));
  }

 private:
  std::int64_t filters_;
  size2d kernel_;
  std::string padding_;
  activations::kind act_;
  conv2d_options o_;
};
}  // namespace fusegrad::nn
