#pragma once
/// \file fg::testing::check_gradients: analytic gradients against central finite differences
/// in double precision (like torch.autograd.gradcheck and tf.test.compute_gradient).

#include <cmath>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../autodiff/gradient_tape.hpp"
#include "reduce.hpp"

namespace fusegrad::testing {

/// How check_gradients probes a function.
struct gradient_check_options {
  double step = 1e-6;             ///< finite-difference step h (central differences)
  double tolerance = 1e-6;        ///< allowed |analytic - numeric| / max(1, |numeric|)
  bool second_order = false;      ///< also check the gradient of the gradient
  std::uint64_t seed = 0;         ///< seed of the random output weights; 0 draws a fresh one
};

/// The outcome: ok, the largest error seen, the seed used, and a report of the worst element.
struct gradient_check_result {
  bool ok = true;
  double max_error = 0;
  std::uint64_t seed = 0;
  std::string report;
  explicit operator bool() const noexcept { return ok; }
};

namespace detail {
using scalar_fn = std::function<tensor<double>(const std::vector<tensor<double>>&)>;
using grads_fn = std::function<std::vector<tensor<double>>(const std::vector<tensor<double>>&)>;

inline tensor<double> weights_like(const fg::shape& s, std::mt19937_64& rng) {
  tensor<double> w(s, fg::device::cpu());
  std::uniform_real_distribution<double> u(0.5, 1.5);
  for (std::size_t i = 0; i < w.size(); ++i) w.buffer()->data[i] = u(rng) * (i % 2 ? -1 : 1);
  return w;
}

inline tensor<double> perturbed(const tensor<double>& x, std::size_t i, double delta) {
  tensor<double> p(x.shape(), fg::device::cpu());
  std::copy(x.data(), x.data() + x.size(), p.buffer()->data);
  p.buffer()->data[i] += delta;
  return p;
}

/// Compares the analytic gradients of the scalar s(inputs) with central differences.
inline void compare(const scalar_fn& scalar, const grads_fn& analytic, const std::vector<tensor<double>>& inputs,
                    const gradient_check_options& o, const char* what, gradient_check_result& r) {
  const std::vector<tensor<double>> a = analytic(inputs);
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    for (std::size_t i = 0; i < inputs[k].size(); ++i) {
      std::vector<tensor<double>> plus = inputs, minus = inputs;
      plus[k] = perturbed(inputs[k], i, o.step);
      minus[k] = perturbed(inputs[k], i, -o.step);
      const double numeric = (scalar(plus).item() - scalar(minus).item()) / (2 * o.step);
      const double ak = a[k].defined() ? a[k].data()[i] : 0.0;
      const double err = std::abs(ak - numeric) / std::max(1.0, std::abs(numeric));
      if (!(err <= r.max_error)) {
        r.max_error = std::isnan(err) ? INFINITY : err;
        std::ostringstream os;
        os << what << ": input " << k << " element " << i << ": analytic " << ak << ", numeric " << numeric
           << " (seed " << r.seed << ")";
        r.report = os.str();
      }
    }
  }
}

/// The gradients of s with respect to every input, recorded by any outer tape.
inline std::vector<tensor<double>> gradients_of(const scalar_fn& s, const std::vector<tensor<double>>& in) {
  gradient_tape tape;
  for (const auto& x : in) tape.watch(x);
  const tensor<double> y = s(in);
  return tape.gradient(y, in, unconnected_gradients::zero);
}
}  // namespace detail

/// Checks the gradients of f (taking the inputs, returning a tensor of any shape) against
/// central finite differences of sum(f(inputs) * w) for random weights w; with second_order,
/// also the gradients of sum(gradients * w2), which exercises backward passes of backward passes.
template <class F>
gradient_check_result check_gradients(F f, const std::vector<tensor<double>>& inputs, gradient_check_options o = {}) {
  gradient_check_result r;
  r.seed = o.seed ? o.seed : std::random_device{}();
  std::mt19937_64 rng(r.seed);
  const tensor<double> y0 = eval(f(inputs));
  const tensor<double> w = detail::weights_like(y0.shape(), rng);
  const detail::scalar_fn scalar = [&](const std::vector<tensor<double>>& in) { return reduce_sum(eval(f(in)) * w); };
  const detail::grads_fn grads = [&](const std::vector<tensor<double>>& in) { return detail::gradients_of(scalar, in); };
  detail::compare(scalar, grads, inputs, o, "first order", r);
  if (o.second_order) {
    std::vector<tensor<double>> w2;
    for (const auto& x : inputs) w2.push_back(detail::weights_like(x.shape(), rng));
    const detail::scalar_fn scalar2 = [&](const std::vector<tensor<double>>& in) {
      const std::vector<tensor<double>> g = grads(in);
      tensor<double> s = 0.0;
      for (std::size_t k = 0; k < g.size(); ++k) s = s + reduce_sum(g[k] * w2[k]);
      return s;
    };
    const detail::grads_fn grads2 = [&](const std::vector<tensor<double>>& in) { return detail::gradients_of(scalar2, in); };
    detail::compare(scalar2, grads2, inputs, o, "second order", r);
  }
  r.ok = r.max_error <= o.tolerance;
  return r;
}
}  // namespace fusegrad::testing
