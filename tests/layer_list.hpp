// The test-side list of Keras layers: every layer of fg::nn appears here, with the shape of the
// input it is called on, the interval its inputs are drawn from, and whether it runs in training
// mode. The generic layer check (layer_gradcheck_test.cpp) runs over this list in float64:
// adding a layer means adding a line.
#pragma once

#include <fusegrad/fusegrad.hpp>
#include <fusegrad/nn.hpp>

#include <functional>
#include <string>
#include <vector>

namespace fg_test {

/// A fresh layer, as the check calls it: its call on a float64 input, and its variables.
struct layer_under_test {
  std::function<fg::tensor<double>(const fg::tensor<double>&)> call;
  std::function<std::vector<fg::nn::named_variable>()> weights;
};

struct layer_case {
  std::string name;
  std::function<layer_under_test()> make;  ///< a new layer each time (its variables made by its first call)
  fg::shape input;
  double lo = -2, hi = 2;      ///< inputs drawn uniformly from [lo, hi]
  bool second_order = true;    ///< also check the gradient of the gradient with respect to the input
};

/// The layer L(args...) called with the given training flag.
template <class L, class... A>
std::function<layer_under_test()> layer(bool training, A... args) {
  return [=] {
    L l(args...);
    return layer_under_test{[l, training](const fg::tensor<double>& x) mutable { return l(x, training); },
                            [l] { return l.weights(); }};
  };
}

inline std::vector<layer_case> layers() {
  namespace nn = fg::nn;
  namespace init = fg::nn::initializers;
  const init::initializer kernel = init::glorot_uniform({.seed = 3}), bias = init::random_uniform({.seed = 4});
  std::vector<layer_case> cases;
  // dense with every activation Keras names; the bias drawn at random so that it matters.
  for (const char* act : {"linear", "relu", "sigmoid", "tanh", "softmax", "log_softmax", "elu", "selu", "gelu", "silu",
                          "softplus", "softsign", "relu6", "leaky_relu", "hard_sigmoid", "exponential"})
    cases.push_back({std::string("dense_") + act,
                     layer<nn::dense>(false, 3, nn::dense_options{.activation = act, .kernel_initializer = kernel,
                                                                  .bias_initializer = bias}),
                     {2, 4}});
  cases.push_back({"dense_no_bias", layer<nn::dense>(false, 3, nn::dense_options{.use_bias = false}), {2, 4}});
  cases.push_back({"dense_rank3", layer<nn::dense>(false, 2, nn::dense_options{.activation = "tanh", .bias_initializer = bias}),
                   {2, 3, 4}});
  cases.push_back({"conv2d_valid", layer<nn::conv2d>(false, 3, fg::size2d{3, 3}, nn::conv2d_options{.bias_initializer = bias}),
                   {2, 5, 5, 2}});
  cases.push_back({"conv2d_same_relu",
                   layer<nn::conv2d>(false, 2, fg::size2d{3, 2},
                                     nn::conv2d_options{.padding = "same", .activation = "relu", .bias_initializer = bias}),
                   {1, 4, 5, 2}});
  cases.push_back({"conv2d_strides",
                   layer<nn::conv2d>(false, 2, fg::size2d{2, 2}, nn::conv2d_options{.strides = 2, .activation = "sigmoid"}),
                   {2, 5, 4, 3}});
  cases.push_back({"conv2d_dilation_no_bias",
                   layer<nn::conv2d>(false, 2, fg::size2d{2, 2},
                                     nn::conv2d_options{.padding = "same", .dilation_rate = 2, .use_bias = false}),
                   {1, 5, 5, 2}});
  cases.push_back({"max_pool2d", layer<nn::max_pool2d>(false, fg::size2d{2, 2}, nn::pool_options{}), {2, 4, 4, 3}});
  cases.push_back({"max_pool2d_same_strides",
                   layer<nn::max_pool2d>(false, fg::size2d{3, 3}, nn::pool_options{.strides = fg::size2d{2, 2}, .padding = "same"}),
                   {1, 5, 5, 2}});
  cases.push_back({"average_pool2d", layer<nn::average_pool2d>(false, fg::size2d{2, 2}, nn::pool_options{}), {2, 4, 4, 3}});
  cases.push_back({"average_pool2d_same",
                   layer<nn::average_pool2d>(false, fg::size2d{2, 3}, nn::pool_options{.strides = fg::size2d{1, 2}, .padding = "same"}),
                   {1, 4, 5, 2}});
  cases.push_back({"global_average_pooling2d", layer<nn::global_average_pooling2d>(false, false, std::string("g")),
                   {2, 3, 3, 2}});
  cases.push_back({"global_max_pooling2d_keepdims", layer<nn::global_max_pooling2d>(false, true, std::string("g")),
                   {2, 3, 3, 2}});
  cases.push_back({"flatten", layer<nn::flatten>(false, std::string("flatten")), {2, 3, 2}});
  cases.push_back({"reshape", layer<nn::reshape>(false, std::vector<long>{3, 2}, std::string("reshape")), {2, 6}});
  cases.push_back({"dropout_inference", layer<nn::dropout>(false, 0.5, nn::dropout_options{}), {2, 3}});
  cases.push_back({"activation_gelu", layer<nn::activation>(false, std::string("gelu"), std::string("a")), {2, 3}});
  cases.push_back({"batch_normalization_training",
                   layer<nn::batch_normalization>(true, nn::batch_normalization_options{.gamma_initializer = bias}),
                   {4, 3}});
  cases.push_back({"batch_normalization_inference",
                   layer<nn::batch_normalization>(false, nn::batch_normalization_options{
                                                             .gamma_initializer = bias,
                                                             .moving_mean_initializer = init::random_uniform({.seed = 5}),
                                                             .moving_variance_initializer = init::constant(0.7)}),
                   {2, 2, 3}});
  cases.push_back({"batch_normalization_training_4d",
                   layer<nn::batch_normalization>(true, nn::batch_normalization_options{.beta_initializer = bias}),
                   {2, 2, 2, 3}});
  return cases;
}
}  // namespace fg_test
