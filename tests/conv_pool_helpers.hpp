#pragma once
// What tests/conv_test.cpp and tests/pooling_test.cpp share: the input pattern of
// tests/reference/conv_pool_values.py, comparisons with TensorFlow's values at a tolerance per
// element type, random inputs and central differences of a scalar function.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <random>
#include <type_traits>
#include <vector>

#include "test_helpers.hpp"

namespace fg_test {

/// ((i * a) % m - m / 2) / scale over the elements of shape s: the inputs of conv_pool_values.py.
template <class T = double>
fg::tensor<T> pattern(const fg::shape& s, long a, long m, double scale) {
  std::vector<T> v(s.elements());
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<T>(static_cast<double>((static_cast<long>(i) * a) % m - m / 2) / scale);
  return fg::tensor<T>(s, v);
}

/// The tolerance of a comparison with TensorFlow's float64 values.
template <class T>
constexpr double tol = std::is_same_v<T, float> ? 2e-5 : 1e-9;

/// Requires shape s and |t - want| <= rel * max(1, |want|) elementwise.
template <class T>
void check_close(const fg::tensor<T>& t, const fg::shape& s, const std::vector<double>& want, double rel) {
  REQUIRE(t.shape() == s);
  REQUIRE(t.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i << ": got " << t.data()[i] << ", want " << want[i]);
    CHECK(std::abs(static_cast<double>(t.data()[i]) - want[i]) <= rel * std::max(1.0, std::abs(want[i])));
  }
}

template <class T>
std::vector<double> as_doubles(const fg::tensor<T>& t) {
  return std::vector<double>(t.data(), t.data() + t.size());
}

inline dtensor uniform_tensor(const fg::shape& s, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(s.elements());
  for (auto& e : v) e = u(rng);
  return dtensor(s, v);
}

/// Central differences of the scalar f at x, step h.
inline dtensor numeric_gradient(const std::function<double(const dtensor&)>& f, const dtensor& x, double h) {
  std::vector<double> g(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    std::vector<double> p(x.data(), x.data() + x.size()), m = p;
    p[i] += h;
    m[i] -= h;
    g[i] = (f(dtensor(x.shape(), p)) - f(dtensor(x.shape(), m))) / (2 * h);
  }
  return dtensor(x.shape(), g);
}
}  // namespace fg_test
