#pragma once
/// \file fg::testing::check_gradients: analytic gradients against central finite differences
/// in double precision (like torch.autograd.gradcheck and tf.test.compute_gradient).

#include <cmath>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gradient_tape.hpp"

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
using fn_t = std::function<tensor<double>(const std::vector<tensor<double>>&)>;

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
inline void compare(const fn_t& scalar, const fn_t& analytic_grads_flat, const std::vector<tensor<double>>& inputs,
                    const gradient_check_options& o, const char* what, gradient_check_result& r) {
  const tensor<double> analytic = analytic_grads_flat(inputs);
  std::size_t offset = 0;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    for (std::size_t i = 0; i < inputs[k].size(); ++i) {
      std::vector<tensor<double>> plus = inputs, minus = inputs;
      plus[k] = perturbed(inputs[k], i, o.step);
      minus[k] = perturbed(inputs[k], i, -o.step);
      const double numeric = (scalar(plus).item() - scalar(minus).item()) / (2 * o.step);
      const double a = analytic.data()[offset + i];
      const double err = std::abs(a - numeric) / std::max(1.0, std::abs(numeric));
      if (!(err <= r.max_error)) {
        r.max_error = std::isnan(err) ? INFINITY : err;
        std::ostringstream os;
        os << what << ": input " << k << " element " << i << ": analytic " << a << ", numeric " << numeric
           << " (seed " << r.seed << ")";
        r.report = os.str();
      }
    }
    offset += inputs[k].size();
  }
}

inline tensor<double> flatten_grads(const std::vector<tensor<double>>& g, const std::vector<tensor<double>>& in) {
  std::size_t n = 0;
  for (const auto& x : in) n += x.size();
  tensor<double> flat = zeros<double>({n});
  std::size_t off = 0;
  for (std::size_t k = 0; k < in.size(); ++k) {
    if (g[k].defined()) std::copy(g[k].data(), g[k].data() + g[k].size(), flat.buffer()->data + off);
    off += in[k].size();
  }
  return flat;
}
}  // namespace detail

/// Checks the gradients of f (taking the inputs, returning a tensor of any shape) against
/// central finite differences of sum(f(inputs) * w) for random weights w.
template <class F>
gradient_check_result check_gradients(F f, const std::vector<tensor<double>>& inputs, gradient_check_options o = {}) {
  gradient_check_result r;
  r.seed = o.seed ? o.seed : std::random_device{}();
  std::mt19937_64 rng(r.seed);
  const tensor<double> y0 = eval(f(inputs));
  const tensor<double> w = detail::weights_like(y0.shape(), rng);
  detail::fn_t scalar = [&](const std::vector<tensor<double>>& in) { return reduce_sum(eval(f(in)) * w); };
  detail::fn_t grads = [&](const std::vector<tensor<double>>& in) {
    gradient_tape tape;
    for (const auto& x : in) tape.watch(x);
    const tensor<double> s = scalar(in);
    return detail::flatten_grads(tape.gradient(s, in, unconnected_gradients::zero), in);
  };
  detail::compare(scalar, grads, inputs, o, "first order", r);
  if (o.second_order) {
    std::size_t n = 0;
    for (const auto& x : inputs) n += x.size();
    const tensor<double> w2 = detail::weights_like(fg::shape{n}, rng);
    detail::fn_t scalar2 = [&](const std::vector<tensor<double>>& in) { return reduce_sum(grads(in) * w2); };
    detail::fn_t grads2 = [&](const std::vector<tensor<double>>& in) {
      gradient_tape outer;
      for (const auto& x : in) outer.watch(x);
      const tensor<double> s = scalar2(in);
      return detail::flatten_grads(outer.gradient(s, in, unconnected_gradients::zero), in);
    };
    detail::compare(scalar2, grads2, inputs, o, "second order", r);
  }
  r.ok = r.max_error <= o.tolerance;
  return r;
}
}  // namespace fusegrad::testing
