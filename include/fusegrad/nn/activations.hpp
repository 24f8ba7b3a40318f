#pragma once
/// \file Keras' activations by name, for layers' `activation` option: "linear" (or ""), "relu",
/// "sigmoid", "tanh", "softmax", "log_softmax", "elu", "selu", "gelu", "silu" and "swish",
/// "softplus", "softsign", "relu6", "leaky_relu", "hard_sigmoid", "exponential". An activation
/// applied to an expression (a layer's product plus its bias) fuses with it into one pass
/// forward and one backward; softmax and log_softmax, reductions, evaluate it first.
/// Note [shared layer code]: a layer chooses its activation at run time, so a program that calls
/// a dense layer compiles the fused loops of every activation, forward and backward; a program
/// that compiles a model also compiles every metric fit can name and the loss it erases. In
/// package mode (FUSEGRAD_SEPARATE_ENGINES, Note [separate engines]) their float32 and float64
/// instantiations are compiled once in libfusegrad (src/nn.cpp) and only declared where they
/// are defined, as the op tables are (Note [shared op tables]): the activations here, the
/// losses, the regularizers, compile's metrics (nn/fit.hpp), a sequential's fit, evaluate and
/// predict (nn/sequential.hpp) and the training ops (eager/training.hpp), each list `extern` in
/// programs and empty in the library. A device
/// program (FUSEGRAD_DEVICE) compiles them itself: the library's are host code.

#include <string>

#include "../autodiff/variable.hpp"
#include "../eager/activations.hpp"
#include "../eager/evaluate.hpp"
#include "../eager/softmax.hpp"
#include "../ops/unary.hpp"

namespace fusegrad::nn::activations {

enum class kind { linear, relu, sigmoid, tanh, softmax, log_softmax, elu, selu, gelu, silu, softplus, softsign, relu6,
                  leaky_relu, hard_sigmoid, exponential };

/// The activation Keras names `name`; an unknown name is an error that lists the known ones,
/// naming `who` (the layer).
inline kind by_name(const std::string& name, const std::string& who) {
  static const std::pair<const char*, kind> known[] = {
      {"", kind::linear},           {"linear", kind::linear},       {"relu", kind::relu},
      {"sigmoid", kind::sigmoid},   {"tanh", kind::tanh},           {"softmax", kind::softmax},
      {"log_softmax", kind::log_softmax}, {"elu", kind::elu},        {"selu", kind::selu},
      {"gelu", kind::gelu},         {"silu", kind::silu},           {"swish", kind::silu},
      {"softplus", kind::softplus}, {"softsign", kind::softsign},   {"relu6", kind::relu6},
      {"leaky_relu", kind::leaky_relu}, {"hard_sigmoid", kind::hard_sigmoid}, {"exponential", kind::exponential}};
  for (const auto& [n, k] : known)
    if (name == n) return k;
  throw value_error("fg::nn::" + who + ": unknown activation '" + name +
                    "'; Keras' names: linear, relu, sigmoid, tanh, softmax, log_softmax, elu, selu, gelu, silu, "
                    "swish, softplus, softsign, relu6, leaky_relu, hard_sigmoid, exponential");
}

/// Activation k applied to x (a tensor or an expression), evaluated in one pass with x.
template <class X, class T = value_type_of<X>>
tensor<T> apply(kind k, const X& x) {
  switch (k) {
    case kind::linear: return tensor<T>(x);
    case kind::relu: return tensor<T>(relu(x));
    case kind::sigmoid: return tensor<T>(sigmoid(x));
    case kind::tanh: return tensor<T>(fusegrad::tanh(x));
    case kind::softmax: return softmax(tensor<T>(x));
    case kind::log_softmax: return log_softmax(tensor<T>(x));
    case kind::elu: return tensor<T>(elu(x));
    case kind::selu: return tensor<T>(selu(x));
    case kind::gelu: return gelu(tensor<T>(x));
    case kind::silu: return tensor<T>(silu(x));
    case kind::softplus: return tensor<T>(softplus(x));
    case kind::softsign: return tensor<T>(softsign(x));
    case kind::relu6: return tensor<T>(relu6(x));
    case kind::leaky_relu: return tensor<T>(leaky_relu(x));
    case kind::hard_sigmoid: return tensor<T>(hard_sigmoid(x));
    case kind::exponential: return tensor<T>(fusegrad::exp(x));
  }
  return tensor<T>(x);
}
/// Activation k of y + bias (bias broadcast along y's last axis), evaluated in one pass: a layer's
/// bias add and activation after its product (dense, conv2d).
template <class T>
tensor<T> apply_biased(kind k, const tensor<T>& y, const variable<T>& bias) {
  return apply(k, y + bias);
}

/// The float32 and float64 activations, compiled once in libfusegrad in package mode (Note
/// [shared layer code], src/nn.cpp): P is `extern` here, empty there.
#define FG_SHARED_ACTIVATIONS(P, T)                                    \
  P template tensor<T> activations::apply<tensor<T>, T>(kind, const tensor<T>&); \
  P template tensor<T> activations::apply_biased<T>(kind, const tensor<T>&, const variable<T>&);
}  // namespace fusegrad::nn::activations

#if defined(FUSEGRAD_SEPARATE_ENGINES) && !defined(FUSEGRAD_DEVICE)
namespace fusegrad::nn {
FG_SHARED_ACTIVATIONS(extern, float)
FG_SHARED_ACTIVATIONS(extern, double)
}  // namespace fusegrad::nn
#endif
