// cumsum and cumprod: values against numpy for every exclusive/reverse combination, errors,
// empty tensors, gradients against central differences, hand-derived second derivatives.
#include <catch2/catch.hpp>
#include <fusegrad/fusegrad.hpp>

#include "test_helpers.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

namespace {
using namespace fg_test;
// Values with 0.5 <= |x| <= 1.5: cumprod's gradient rule holds away from zero.
dtensor random_nonzero(const fg::shape& s, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(s.elements());
  for (auto& e : v) {
    const double r = u(rng);
    e = r < 0 ? r - 0.5 : r + 0.5;
  }
  return dtensor(s, v);
}

const dtensor X = {{1., 2., 3.}, {4., 5., 6.}};
}  // namespace

TEST_CASE("cumsum of a vector with every exclusive and reverse combination", "[scan][cumsum]") {
  const fg::tensor<std::int32_t> v = {1, 2, 3, 4};
  using r = std::vector<std::int32_t>;
  check_values(fg::cumsum(v), {4}, r{1, 3, 6, 10});
  check_values(fg::cumsum(v, 0, true), {4}, r{0, 1, 3, 6});
  check_values(fg::cumsum(v, 0, false, true), {4}, r{10, 9, 7, 4});
  check_values(fg::cumsum(v, 0, true, true), {4}, r{9, 7, 4, 0});
}

TEST_CASE("cumsum along an axis of a matrix and of a rank-3 tensor matches numpy", "[scan][cumsum]") {
  using r = std::vector<double>;
  check_values(fg::cumsum(X, 0), {2, 3}, r{1, 2, 3, 5, 7, 9});          // np.cumsum(X, 0)
  check_values(fg::cumsum(X, 1), {2, 3}, r{1, 3, 6, 4, 9, 15});         // np.cumsum(X, 1)
  check_values(fg::cumsum(X, -1), {2, 3}, r{1, 3, 6, 4, 9, 15});
  check_values(fg::cumsum(X, 1, true), {2, 3}, r{0, 1, 3, 0, 4, 9});    // np.cumsum(X, 1) - X
  check_values(fg::cumsum(X, 0, false, true), {2, 3}, r{5, 7, 9, 4, 5, 6});  // np.flip(np.cumsum(np.flip(X, 0), 0), 0)
  check_values(fg::cumsum(X * 1.0, 1), {2, 3}, r{1, 3, 6, 4, 9, 15});
  const auto y = fg::reshape(fg::range<std::int64_t>(24), {2, 3, 4});
  // np.cumsum(np.arange(24).reshape(2, 3, 4), 1).flatten()
  check_values(fg::cumsum(y, 1), {2, 3, 4}, std::vector<std::int64_t>{0, 1, 2, 3, 4, 6, 8, 10, 12, 15, 18, 21, 12,
                                                                        13, 14, 15, 28, 30, 32, 34, 48, 51, 54, 57});
}

TEST_CASE("cumprod with every exclusive and reverse combination matches numpy", "[scan][cumprod]") {
  const fg::tensor<std::int64_t> v = {1, 2, 3, 4};
  using r = std::vector<std::int64_t>;
  check_values(fg::cumprod(v), {4}, r{1, 2, 6, 24});
  check_values(fg::cumprod(v, 0, true), {4}, r{1, 1, 2, 6});
  check_values(fg::cumprod(v, 0, false, true), {4}, r{24, 24, 12, 4});
  check_values(fg::cumprod(v, 0, true, true), {4}, r{24, 12, 4, 1});
  check_values(fg::cumprod(X, 1), {2, 3}, std::vector<double>{1, 2, 6, 4, 20, 120});  // np.cumprod(X, 1)
  check_values(fg::cumprod(X, 0), {2, 3}, std::vector<double>{1, 2, 3, 4, 10, 18});   // np.cumprod(X, 0)
  // np.flip(np.cumprod(np.flip(X, 1), 1), 1) / X
  check_values(fg::cumprod(X, 1, true, true), {2, 3}, std::vector<double>{6, 3, 1, 30, 6, 1});
  check_values(fg::cumprod(fg::cast<float>(X), -1), {2, 3}, std::vector<float>{1, 2, 6, 4, 20, 120});
}

TEST_CASE("scans of empty tensors are empty", "[scan]") {
  CHECK(fg::cumsum(fg::zeros<float>({0})).shape() == fg::shape{0});
  CHECK(fg::cumprod(fg::zeros<float>({2, 0}), 1, true).shape() == fg::shape{2, 0});
  CHECK(fg::cumsum(fg::zeros<double>({0, 3}), 1, false, true).shape() == fg::shape{0, 3});
}

TEST_CASE("scans reject a scalar and an axis out of range", "[scan][errors]") {
  CHECK_THROWS_AS(fg::cumsum(dtensor(1.0)), fg::shape_error);
  CHECK_THROWS_WITH(fg::cumsum(dtensor(1.0)), Catch::Contains("fg::cumsum") && Catch::Contains("rank >= 1"));
  CHECK_THROWS_AS(fg::cumprod(X, 2), fg::index_error);
  CHECK_THROWS_WITH(fg::cumprod(X, 2), Catch::Contains("fg::cumprod") && Catch::Contains("axis 2"));
  CHECK_THROWS_WITH(fg::cumsum(X, -3), Catch::Contains("axis -3") && Catch::Contains("rank 2"));
}

TEST_CASE("cumsum's gradient matches finite differences for every flag combination", "[scan][gradient]") {
  std::mt19937 rng(71);
  const dtensor x = random_tensor({3, 4}, rng);
  unsigned seed = 100;
  for (long axis : {0L, 1L, -1L})
    for (bool exclusive : {false, true})
      for (bool reverse : {false, true}) {
        INFO("axis " << axis << " exclusive " << exclusive << " reverse " << reverse);
        check_gradients_fd([=](const std::vector<dtensor>& v) { return fg::cumsum(v[0], axis, exclusive, reverse); },
                           {x}, seed++);
      }
  check_gradients_fd([](const std::vector<dtensor>& v) { return fg::cumsum(v[0] * v[0], 1); }, {x}, seed++);
}

TEST_CASE("cumprod's gradient matches finite differences for nonzero inputs and every flag combination",
          "[scan][gradient]") {
  std::mt19937 rng(72);
  const dtensor x = random_nonzero({3, 4}, rng);
  unsigned seed = 200;
  for (long axis : {0L, 1L})
    for (bool exclusive : {false, true})
      for (bool reverse : {false, true}) {
        INFO("axis " << axis << " exclusive " << exclusive << " reverse " << reverse);
        check_gradients_fd([=](const std::vector<dtensor>& v) { return fg::cumprod(v[0], axis, exclusive, reverse); },
                           {x}, seed++);
      }
}

TEST_CASE("second derivative through cumsum matches the hand-derived Hessian-vector product", "[scan][higher_order]") {
  // f = sum(w * c^2), c = cumsum(x): (H v)[k] = 2 sum_i v[i] sum_{j >= max(i, k)} w[j].
  std::mt19937 rng(73);
  const std::size_t n = 5;
  const dtensor x = random_tensor({n}, rng), v = random_tensor({n}, rng), w = random_tensor({n}, rng);
  fg::gradient_tape tape({.persistent = true});
  tape.watch(x);
  const dtensor c = fg::cumsum(x);
  const dtensor g = tape.gradient(fg::sum(w * c * c), x);
  const dtensor hv = tape.gradient(g, x, v);
  for (std::size_t k = 0; k < n; ++k) {
    double ref = 0;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = std::max(i, k); j < n; ++j) ref += 2 * v.data()[i] * w.data()[j];
    CHECK(hv.data()[k] == Approx(ref).epsilon(1e-12));
  }
}

TEST_CASE("second derivative through cumprod matches the hand-derived Hessian-vector product", "[scan][higher_order]") {
  // f = sum(w * cumprod(x)): H[a, b] = sum_{j >= max(a, b)} w[j] prod_{i <= j, i != a, b} x[i]
  // for a != b, and H[a, a] = 0.
  std::mt19937 rng(74);
  const std::size_t n = 4;
  const dtensor x = random_nonzero({n}, rng), v = random_tensor({n}, rng), w = random_tensor({n}, rng);
  fg::gradient_tape tape({.persistent = true});
  tape.watch(x);
  const dtensor g = tape.gradient(fg::sum(w * fg::cumprod(x)), x);
  const dtensor hv = tape.gradient(g, x, v);
  for (std::size_t a = 0; a < n; ++a) {
    double ref = 0;
    for (std::size_t b = 0; b < n; ++b) {
      if (b == a) continue;
      for (std::size_t j = std::max(a, b); j < n; ++j) {
        double p = w.data()[j];
        for (std::size_t i = 0; i <= j; ++i)
          if (i != a && i != b) p *= x.data()[i];
        ref += p * v.data()[b];
      }
    }
    CHECK(hv.data()[a] == Approx(ref).epsilon(1e-10));
  }
}

TEST_CASE("scans reject an undefined tensor with a value_error", "[scan][errors]") {
  CHECK_THROWS_AS(fg::cumsum(dtensor()), fg::value_error);
  CHECK_THROWS_WITH(fg::cumprod(dtensor()), Catch::Contains("fg::cumprod") && Catch::Contains("undefined"));
}

TEST_CASE("integer cumsum and cumprod wrap around as two's complement", "[scan][integer]") {
  using i32 = std::int32_t;
  using i64 = std::int64_t;
  constexpr i32 imax = std::numeric_limits<i32>::max(), imin = std::numeric_limits<i32>::min();
  CHECK(values(fg::cumsum(fg::tensor<i32>{imax, 1, 1})) == std::vector<i32>{imax, imin, imin + 1});
  CHECK(values(fg::cumsum(fg::tensor<i32>{1, 1, imax}, 0, false, true)) == std::vector<i32>{imin + 1, imin, imax});
  CHECK(values(fg::cumprod(fg::tensor<i32>{65536, 65536, 3})) == std::vector<i32>{65536, 0, 0});
  CHECK(values(fg::cumprod(fg::tensor<i32>{imax, 2})) == std::vector<i32>{imax, -2});
  constexpr i64 lmax = std::numeric_limits<i64>::max(), lmin = std::numeric_limits<i64>::min();
  CHECK(values(fg::cumsum(fg::tensor<i64>{lmax, i64{1}})) == std::vector<i64>{lmax, lmin});
}
