// The test-side list of differentiable ops: every op appears here once, with the domain its
// inputs are drawn from and the shapes it is called with (including broadcasting). The generic
// gradient check (gradcheck_test.cpp) runs over this list; adding an op means adding a line.
#pragma once

#include <fusegrad/fusegrad.hpp>
#include <fusegrad/eager/nn_ops.hpp>

#include <functional>
#include <string>
#include <vector>

namespace fg_test {

using inputs = std::vector<fg::tensor<double>>;

struct op_case {
  std::string name;
  std::function<fg::tensor<double>(const inputs&)> f;
  std::vector<fg::shape> shapes;  ///< one per input
  double lo = -2, hi = 2;         ///< inputs drawn uniformly from [lo, hi]
  bool second_order = true;
};

template <class F>
op_case unary(std::string name, F f, double lo = -2, double hi = 2) {
  return {std::move(name), [f](const inputs& x) { return fg::tensor<double>(f(x[0])); }, {{2, 3}}, lo, hi};
}
template <class F>
op_case binary(std::string name, F f, fg::shape a, fg::shape b, double lo = -2, double hi = 2) {
  return {std::move(name), [f](const inputs& x) { return fg::tensor<double>(f(x[0], x[1])); }, {a, b}, lo, hi};
}

inline std::vector<op_case> differentiable_ops() {
  using T = const fg::tensor<double>&;
  std::vector<op_case> ops = {
      unary("negative", [](T x) { return -x; }),
      unary("abs", [](T x) { return fg::abs(x); }, 0.1, 2),
      unary("exp", [](T x) { return fg::exp(x); }),
      unary("expm1", [](T x) { return fg::expm1(x); }),
      unary("log", [](T x) { return fg::log(x); }, 0.3, 3),
      unary("log1p", [](T x) { return fg::log1p(x); }, -0.5, 2),
      unary("sqrt", [](T x) { return fg::sqrt(x); }, 0.3, 3),
      unary("rsqrt", [](T x) { return fg::rsqrt(x); }, 0.3, 3),
      unary("square", [](T x) { return fg::square(x); }),
      unary("reciprocal", [](T x) { return fg::reciprocal(x); }, 0.3, 3),
      unary("sin", [](T x) { return fg::sin(x); }),
      unary("cos", [](T x) { return fg::cos(x); }),
      unary("tan", [](T x) { return fg::tan(x); }, -1, 1),
      unary("tanh", [](T x) { return fg::tanh(x); }),
      unary("sigmoid", [](T x) { return fg::sigmoid(x); }),
      unary("sigmoid_derivative", [](T x) { return fg::sigmoid_derivative(x); }),
      unary("softplus", [](T x) { return fg::softplus(x); }),
      unary("relu", [](T x) { return fg::relu(x); }, 0.1, 2),
      unary("relu_negative_side", [](T x) { return fg::relu(x); }, -2, -0.1),
      binary("add", [](T a, T b) { return a + b; }, {2, 3}, {3}),
      binary("subtract", [](T a, T b) { return a - b; }, {2, 1}, {1, 3}),
      binary("multiply", [](T a, T b) { return a * b; }, {2, 3}, {2, 3}),
      binary("multiply_broadcast", [](T a, T b) { return a * b; }, {4, 1, 3}, {2, 1}),
      binary("divide", [](T a, T b) { return a / b; }, {2, 3}, {3}, 0.5, 2),
      binary("pow", [](T a, T b) { return fg::pow(a, b); }, {2, 3}, {2, 3}, 0.5, 2),
      binary("maximum", [](T a, T b) { return fg::maximum(a, b); }, {2, 3}, {2, 3}),
      binary("minimum", [](T a, T b) { return fg::minimum(a, b); }, {2, 3}, {3}),
      binary("mod", [](T a, T b) { return fg::mod(a, b + 3); }, {2, 3}, {2, 3}, 0.1, 0.9),
      binary("where", [](T a, T b) { return fg::where(a > b, a * a, b * 3); }, {2, 3}, {2, 3}),
      binary("scalar_mix", [](T a, T b) { return 2.5 * a - b / 4 + 1; }, {2, 3}, {2, 3}),
      unary("chain", [](T x) { return fg::log(1 + fg::exp(x)) * fg::sigmoid(x) + x * x; }),
      unary("repeated_leaf", [](T x) { return x * fg::sin(x) * x + fg::exp(x * 0.5) / (x * x + 1); }),
      unary("reduce_sum_all", [](T x) { return fg::reduce_sum(x * x); }),
      unary("reduce_sum_axis", [](T x) { return fg::reduce_sum(fg::exp(x), 1); }),
      unary("reduce_sum_keepdims", [](T x) { return fg::reduce_sum(x * x, 0, true) * x; }),
      unary("reduce_mean", [](T x) { return fg::reduce_mean(fg::sin(x), {0, 1}); }),
      unary("reduce_max", [](T x) { return fg::reduce_max(x, 1); }),
      unary("reduce_min", [](T x) { return fg::reduce_min(x * 3, 0); }),
      unary("reduce_prod", [](T x) { return fg::reduce_prod(x, 1); }, 0.5, 2),
      unary("reduce_logsumexp", [](T x) { return fg::reduce_logsumexp(x, 1); }),
      unary("reshape", [](T x) { return fg::reshape(fg::eval(x * x), {3, -1}); }),
      // Neural-network ops: erf and erfc, activations, softmax, cross-entropies, normalisations,
      // bias_add, dropout (eager/activations.hpp ... eager/dropout.hpp).
      unary("erf", [](T x) { return fg::erf(x); }),
      unary("erfc", [](T x) { return fg::erfc(x); }),
      unary("leaky_relu", [](T x) { return fg::leaky_relu(x); }),
      unary("elu", [](T x) { return fg::elu(x); }),
      unary("selu", [](T x) { return fg::selu(x); }),
      unary("gelu", [](T x) { return fg::gelu(x); }, -4, 4),
      unary("gelu_approximate", [](T x) { return fg::gelu(x, true); }, -4, 4),
      unary("silu", [](T x) { return fg::silu(x); }),
      unary("relu6", [](T x) { return fg::relu6(x * 4); }),
      unary("softsign", [](T x) { return fg::softsign(x); }),
      unary("hard_sigmoid", [](T x) { return fg::hard_sigmoid(x); }, -4, 4),
      unary("softmax", [](T x) { return fg::softmax(x); }),
      unary("softmax_axis_0", [](T x) { return fg::softmax(x * 2, 0); }),
      unary("log_softmax", [](T x) { return fg::log_softmax(x); }),
      unary("log_softmax_axis_0", [](T x) { return fg::log_softmax(x, 0); }),
      binary("softmax_cross_entropy_with_logits",
             [](T z, T x) { return fg::softmax_cross_entropy_with_logits(z, x); }, {2, 3}, {2, 3}),
      binary("softmax_cross_entropy_with_logits_axis_0",
             [](T z, T x) { return fg::softmax_cross_entropy_with_logits(z * z, x, 0); }, {2, 3}, {2, 3}),
      unary("sparse_softmax_cross_entropy_with_logits",
            [](T x) {
              const fg::tensor<std::int64_t> labels = {std::int64_t{0}, std::int64_t{2}};
              return fg::sparse_softmax_cross_entropy_with_logits(labels, x * 2);
            }),
      binary("sigmoid_cross_entropy_with_logits",
             [](T z, T x) { return fg::sigmoid_cross_entropy_with_logits(z, x * 3); }, {2, 3}, {2, 3}),
      unary("l2_normalize", [](T x) { return fg::l2_normalize(x, 1); }),
      binary("bias_add", [](T v, T b) { return fg::bias_add(v, b); }, {2, 3}, {3}),
      unary("moments_mean", [](T x) { return fg::moments(x, 0).mean; }),
      unary("moments_variance", [](T x) { return fg::moments(x, {0, 1}, true).variance; }),
      {"batch_normalization",
       [](const inputs& x) {
         return fg::batch_normalization(x[0], x[1], fg::square(x[2]) + 0.5, x[3], x[4], 1e-3);
       },
       {{2, 3}, {3}, {3}, {3}, {3}}},
      {"fused_batch_norm_training",
       [](const inputs& x) { return fg::fused_batch_norm(x[0], x[1], x[2]).y; },
       {{2, 2, 2, 3}, {3}, {3}}},
      {"fused_batch_norm_running_statistics",
       [](const inputs& x) {
         const auto r = fg::fused_batch_norm(x[0], {}, {}, x[1], fg::square(x[2]) + 0.5, 1e-3, 0.3);
         return fg::tensor<double>(r.batch_mean * r.batch_variance);
       },
       {{2, 2, 2, 3}, {3}, {3}}},
      {"fused_batch_norm_inference",
       [](const inputs& x) {
         return fg::fused_batch_norm(x[0], x[1], x[2], x[3], fg::square(x[4]) + 0.5, 1e-3, 1.0, false).y;
       },
       {{2, 2, 2, 3}, {3}, {3}, {3}, {3}}},
      unary("dropout", [](T x) { return fg::dropout(x, 0.4, 7); }),
      // Convolutions and pools (eager/conv.hpp, eager/pooling.hpp): boundary ops whose gradients
      // are boundary ops again. SAME with stride 2 on 6 pads one row after only (cuDNN's path
      // for uneven padding on a GPU).
      binary("conv2d", [](T x, T f) { return fg::conv2d(x, f, 2, "SAME"); }, {2, 6, 6, 2}, {3, 3, 2, 3}),
      binary("conv2d_dilated_valid", [](T x, T f) { return fg::conv2d(x, f, 1, "VALID", 2); }, {1, 6, 5, 2},
             {2, 2, 2, 2}),
      binary("conv2d_transpose", [](T x, T f) { return fg::conv2d_transpose(x, f, {1, 6, 6, 2}, 2, "SAME"); },
             {1, 3, 3, 3}, {3, 3, 2, 3}),
      {"max_pool2d", [](const inputs& x) { return fg::max_pool2d(x[0], 3, 2, "SAME"); }, {{2, 5, 5, 2}}},
      {"avg_pool2d", [](const inputs& x) { return fg::avg_pool2d(x[0], 2, 1, "SAME"); }, {{1, 5, 4, 3}}},
  };
  return ops;
}
}  // namespace fg_test
