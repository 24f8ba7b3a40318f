#pragma once
// Helpers shared by the host test files: reading a tensor's elements, comparing them with a
// reference, what operator<< prints, IEEE special values, and a finite-difference check of tape
// gradients for ops over double tensors. References stay in the test files that use them.
#include <catch2/catch.hpp>
#include <fusegrad/fusegrad.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace fg_test {
/// How strictly a result is compared with its reference.
struct tolerance {
  double rel = 0;         ///< relative error allowed on finite nonzero values (0: exact)
  bool zero_sign = true;  ///< whether a zero must carry the reference's sign bit
};

/// Whether got matches want: for floating types NaN for NaN, exact infinities, signed zeros,
/// else within tol.rel; for others equality.
template <class T>
bool matches(T got, T want, tolerance tol) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(want)) return std::isnan(got);
    if (std::isinf(want) || tol.rel == 0) {
      if (got != want) return false;
    } else if (want == 0) {
      if (got != 0) return false;
    } else if (!(std::fabs(static_cast<double>(got) - want) <= tol.rel * std::fabs(static_cast<double>(want)))) {
      return false;
    }
    return !(want == 0 && tol.zero_sign && std::signbit(got) != std::signbit(want));
  } else {
    return got == want;
  }
}

inline constexpr float inf_f = std::numeric_limits<float>::infinity();
inline constexpr float nan_f = std::numeric_limits<float>::quiet_NaN();
inline constexpr float dmin_f = std::numeric_limits<float>::denorm_min();
inline constexpr double inf_d = std::numeric_limits<double>::infinity();
inline constexpr double nan_d = std::numeric_limits<double>::quiet_NaN();
inline constexpr double dmin_d = std::numeric_limits<double>::denorm_min();

using dtensor = fg::tensor<double>;
/// An op under test: its inputs in, its result out.
using op_fn = std::function<dtensor(const std::vector<dtensor>&)>;

/// The elements of t in row-major order.
template <class T>
std::vector<T> values(const fg::tensor<T>& t) {
  return std::vector<T>(t.data(), t.data() + t.size());
}

/// What operator<< prints for x.
template <class X>
std::string str(const X& x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

/// Requires shape s and exactly the elements v.
template <class T>
void check_values(const fg::tensor<T>& t, const fg::shape& s, const std::vector<T>& v) {
  REQUIRE(t.shape() == s);
  REQUIRE(t.size() == v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    INFO("element " << i);
    CHECK(t.data()[i] == v[i]);
  }
}

/// Uniform values in [-1, 1).
inline dtensor random_tensor(const fg::shape& s, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(s.elements());
  for (auto& e : v) e = u(rng);
  return dtensor(s, v);
}

/// sum(y * w), computed here rather than by fusegrad.
inline double weighted_sum(const dtensor& y, const dtensor& w) {
  double s = 0;
  for (std::size_t i = 0; i < y.size(); ++i) s += y.data()[i] * w.data()[i];
  return s;
}

/// Tape gradients of sum(op(xs) * w), w random, against central differences with h = 1e-6:
/// |tape - fd| <= 1e-6 * max(1, |fd|) for every element of every input.
inline void check_gradients_fd(const op_fn& op, const std::vector<dtensor>& xs, unsigned seed) {
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  const dtensor w = random_tensor(op(xs).shape(), rng);
  std::vector<dtensor> grads;
  {
    fg::gradient_tape tape;
    for (const auto& x : xs) tape.watch(x);
    const dtensor loss = fg::sum(op(xs) * w);
    grads = tape.gradient(loss, xs);
  }
  const double h = 1e-6;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    INFO("input " << i);
    REQUIRE(grads[i].defined());
    REQUIRE(grads[i].shape() == xs[i].shape());
    for (std::size_t e = 0; e < xs[i].size(); ++e) {
      std::vector<double> plus(xs[i].data(), xs[i].data() + xs[i].size()), minus = plus;
      plus[e] += h;
      minus[e] -= h;
      std::vector<dtensor> xp = xs, xm = xs;
      xp[i] = dtensor(xs[i].shape(), plus);
      xm[i] = dtensor(xs[i].shape(), minus);
      const double fd = (weighted_sum(op(xp), w) - weighted_sum(op(xm), w)) / (2 * h);
      INFO("element " << e << ": tape " << grads[i].data()[e] << ", finite difference " << fd);
      CHECK(std::abs(grads[i].data()[e] - fd) <= 1e-6 * std::max(1.0, std::abs(fd)));
    }
  }
}
/// A float64 tensor of shape s with elements drawn uniformly from [lo, hi) by rng (inputs of
/// the gradient checks).
inline fg::tensor<double> uniform(const fg::shape& s, double lo, double hi, std::mt19937_64& rng) {
  fg::tensor<double> t(s, fg::device::cpu());
  std::uniform_real_distribution<double> u(lo, hi);
  for (std::size_t i = 0; i < t.size(); ++i) t.buffer()->data[i] = u(rng);
  return t;
}
}  // namespace fg_test
