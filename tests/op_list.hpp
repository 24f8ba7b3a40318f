// The test-side list of differentiable ops: every op appears here once, with the domain its
// inputs are drawn from and the shapes it is called with (including broadcasting). The generic
// gradient check (gradcheck_test.cpp) runs over this list; adding an op means adding a line.
#pragma once

#include <fusegrad/fusegrad.hpp>

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
  };
  return ops;
}
}  // namespace fg_test
