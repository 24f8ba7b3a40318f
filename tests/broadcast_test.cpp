// Broadcasting: numpy's rules on every rank up to 5, the flat and the row-by-row evaluation paths
// checked against an element-by-element reference loop, mismatch errors that name the op and
// both shapes, and fusion: a long chain with broadcast operands and scalars is one pass.
#include <catch2/catch.hpp>
#include <fusegrad/fusegrad.hpp>

#include "test_helpers.hpp"

#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {
using namespace fg_test;
/// numpy's broadcast shape, written out independently of fusegrad (dimension sizes as vectors).
std::vector<std::size_t> broadcast_dims(const std::vector<std::size_t>& a, const std::vector<std::size_t>& b) {
  const std::size_t r = std::max(a.size(), b.size());
  std::vector<std::size_t> out(r);
  for (std::size_t i = 0; i < r; ++i) {
    const std::size_t da = i + a.size() >= r ? a[i + a.size() - r] : 1;
    const std::size_t db = i + b.size() >= r ? b[i + b.size() - r] : 1;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

/// Flat index into a row-major tensor of dims `in` for the multi-index `idx` of a broadcast
/// result of rank idx.size(): dimensions of size 1 (and missing leading ones) are repeated.
std::size_t source_index(const std::vector<std::size_t>& in, const std::vector<std::size_t>& idx) {
  std::size_t flat = 0;
  const std::size_t off = idx.size() - in.size();
  for (std::size_t d = 0; d < in.size(); ++d) flat = flat * in[d] + (in[d] == 1 ? 0 : idx[d + off]);
  return flat;
}

/// Calls f(multi-index, flat index) for every element of a row-major shape.
template <class F>
void for_each_index(const std::vector<std::size_t>& dims, F f) {
  std::size_t n = 1;
  for (std::size_t d : dims) n *= d;
  std::vector<std::size_t> idx(dims.size(), 0);
  for (std::size_t k = 0; k < n; ++k) {
    f(idx, k);
    for (std::size_t d = dims.size(); d-- > 0;) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
}

/// Number of elements of a shape given as dimension sizes.
std::size_t count(const std::vector<std::size_t>& dims) {
  std::size_t n = 1;
  for (std::size_t d : dims) n *= d;
  return n;
}

/// A tensor of the given dimensions with seeded random values in [-2, 2] (integers in [-9, 9]).
template <class T>
fg::tensor<T> random_tensor(const std::vector<std::size_t>& dims, std::mt19937& gen) {
  std::vector<T> v(count(dims));
  if constexpr (std::is_floating_point_v<T>) {
    std::uniform_real_distribution<double> u(-2, 2);
    for (T& x : v) x = static_cast<T>(u(gen));
  } else {
    std::uniform_int_distribution<int> u(-9, 9);
    for (T& x : v) x = static_cast<T>(u(gen));
  }
  return fg::tensor<T>(fg::shape(dims.begin(), dims.end()), v);
}

/// A shape as plain dimension sizes, for the reference loops.
using dims_t = std::vector<std::size_t>;

/// Shape pairs covering the flat path (same shape, one-element operands) and the row path
/// (a row walked with the output, a row broadcast from one element, leading dimensions added).
const std::vector<std::pair<dims_t, dims_t>>& shape_pairs() {
  static const std::vector<std::pair<dims_t, dims_t>> pairs = {
      {{37}, {37}},           {{3, 37}, {}},         {{3, 37}, {1, 1}},        {{3, 37}, {37}},
      {{3, 37}, {3, 1}},      {{37}, {3, 37}},       {{3, 1}, {3, 37}},        {{4, 1, 37}, {5, 37}},
      {{2, 3, 1}, {1, 3, 20}}, {{1}, {6, 17}},       {{17, 1}, {1, 17}},       {{5, 1, 3}, {1, 4, 1}},
      {{2, 3, 4}, {4}},       {{2, 1, 3, 1, 2}, {1, 4, 1, 5, 1}},             {{0, 3}, {1, 3}},
      {{2, 0}, {2, 1}},       {{1, 1, 1, 1, 40}, {2, 1, 2, 1, 1}},
  };
  return pairs;
}
}  // namespace

TEST_CASE("(3, 1) + (1, 4) gives the (3, 4) outer sum", "[broadcast]") {
  const fg::tensor<int> a = {{0}, {10}, {20}};
  const fg::tensor<int> b = {{1, 2, 3, 4}};
  const fg::tensor<int> c = a + b;
  CHECK(c.shape() == fg::shape{3, 4});
  CHECK(values(c) == std::vector<int>{1, 2, 3, 4, 11, 12, 13, 14, 21, 22, 23, 24});
  const fg::tensor<int> d = b + a;
  CHECK(values(d) == values(c));
}

TEST_CASE("(2, 3, 4) + (4,) adds the row to every row", "[broadcast]") {
  std::vector<float> av(24);
  for (std::size_t k = 0; k < 24; ++k) av[k] = static_cast<float>(k);
  const fg::tensor<float> a(fg::shape{2, 3, 4}, av);
  const fg::tensor<float> b = {0.5f, -1.f, 100.f, 0.f};
  const fg::tensor<float> c = a + b;
  REQUIRE(c.shape() == fg::shape{2, 3, 4});
  for (std::size_t k = 0; k < 24; ++k) CHECK(c.data()[k] == av[k] + b.data()[k % 4]);
}

TEST_CASE("(5, 1, 3) * (1, 4, 1) gives (5, 4, 3)", "[broadcast]") {
  std::vector<double> av(15), bv = {1.0, -2.0, 0.5, 10.0};
  for (std::size_t k = 0; k < 15; ++k) av[k] = static_cast<double>(k) + 1;
  const fg::tensor<double> a(fg::shape{5, 1, 3}, av);
  const fg::tensor<double> b(fg::shape{1, 4, 1}, bv);
  const fg::tensor<double> c = a * b;
  REQUIRE(c.shape() == fg::shape{5, 4, 3});
  for (std::size_t i = 0; i < 5; ++i)
    for (std::size_t j = 0; j < 4; ++j)
      for (std::size_t k = 0; k < 3; ++k) CHECK(c.data()[(i * 4 + j) * 3 + k] == av[i * 3 + k] * bv[j]);
}

TEST_CASE("a scalar broadcasts against any shape, as a rank-0 tensor or a C++ value", "[broadcast]") {
  const fg::tensor<float> s = 2.f;
  for (const fg::shape& sh : {fg::shape{}, fg::shape{1}, fg::shape{7}, fg::shape{2, 3}, fg::shape{0, 4},
                              fg::shape{2, 1, 3, 1, 2}}) {
    INFO("shape " << sh);
    std::vector<float> v(sh.elements());
    for (std::size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>(k) - 3.f;
    const fg::tensor<float> x(sh, v);
    const fg::tensor<float> a = x * s + 1.f;
    const fg::tensor<float> b = s - x;
    CHECK(a.shape() == sh);
    CHECK(b.shape() == sh);
    for (std::size_t k = 0; k < v.size(); ++k) {
      CHECK(a.data()[k] == v[k] * 2.f + 1.f);
      CHECK(b.data()[k] == 2.f - v[k]);
    }
  }
}

TEST_CASE("rank-5 operands broadcast on every axis: (2, 1, 3, 1, 2) + (1, 4, 1, 5, 1)", "[broadcast]") {
  std::vector<std::int64_t> av(12), bv(20);
  for (std::size_t k = 0; k < 12; ++k) av[k] = static_cast<std::int64_t>(k) * 1000;
  for (std::size_t k = 0; k < 20; ++k) bv[k] = static_cast<std::int64_t>(k);
  const fg::tensor<std::int64_t> a(fg::shape{2, 1, 3, 1, 2}, av);
  const fg::tensor<std::int64_t> b(fg::shape{1, 4, 1, 5, 1}, bv);
  const fg::tensor<std::int64_t> c = a + b;
  REQUIRE(c.shape() == fg::shape{2, 4, 3, 5, 2});
  for_each_index({2, 4, 3, 5, 2}, [&](const std::vector<std::size_t>& i, std::size_t k) {
    CHECK(c.data()[k] == av[(i[0] * 3 + i[2]) * 2 + i[4]] + bv[i[1] * 5 + i[3]]);
  });
}

TEST_CASE("shapes that do not broadcast throw fg::shape_error naming the op and both shapes", "[broadcast][error]") {
  const fg::tensor<float> a = fg::zeros<float>({2, 3});
  const fg::tensor<float> b = fg::zeros<float>({4});
  CHECK_THROWS_AS(a + b, fg::shape_error);
  CHECK_THROWS_AS(a + b, std::invalid_argument);
  CHECK_THROWS_WITH(a + b, Catch::Contains("add") && Catch::Contains("(2, 3)") && Catch::Contains("(4,)"));
  CHECK_THROWS_WITH(fg::multiply(fg::zeros<float>({5, 1, 3}), fg::zeros<float>({4, 2})),
                    Catch::Contains("multiply") && Catch::Contains("(5, 1, 3)") && Catch::Contains("(4, 2)"));
  CHECK_THROWS_WITH(fg::zeros<int>({3}) < fg::zeros<int>({2}),
                    Catch::Contains("less") && Catch::Contains("(3,)") && Catch::Contains("(2,)"));
  CHECK_THROWS_WITH(fg::where(fg::zeros<float>({3}) > 0, fg::zeros<float>({3}), fg::zeros<float>({2, 2})),
                    Catch::Contains("where") && Catch::Contains("(2, 2)"));
  // The error comes from inside a longer chain too, and names the failing op.
  CHECK_THROWS_WITH(fg::exp(a) * 2 - fg::sin(b), Catch::Contains("subtract") && Catch::Contains("(2, 3)") &&
                                                     Catch::Contains("(4,)"));
  // An empty dimension broadcasts only against 1 or itself.
  CHECK_THROWS_AS(fg::zeros<float>({0}) + fg::zeros<float>({2}), fg::shape_error);
}

TEST_CASE("flat and row-wise evaluation agree with an element-by-element reference loop", "[broadcast]") {
  const unsigned seed = 7321;
  INFO("seed " << seed);
  std::mt19937 gen(seed);
  for (const auto& [da, db] : shape_pairs()) {
    const dims_t out = broadcast_dims(da, db);
    INFO("shapes " << fg::shape(da.begin(), da.end()) << " and " << fg::shape(db.begin(), db.end()));
    const fg::tensor<float> af = random_tensor<float>(da, gen), bf = random_tensor<float>(db, gen);
    const fg::tensor<double> ad = random_tensor<double>(da, gen), bd = random_tensor<double>(db, gen);
    const fg::tensor<int> ai = random_tensor<int>(da, gen), bi = random_tensor<int>(db, gen);
    const fg::tensor<float> yf = af * bf + af - bf / (bf * bf + 1);
    const fg::tensor<double> yd = fg::exp(ad) * bd - fg::sin(ad - bd);
    const fg::tensor<int> yi = ai * bi - ai + 3 * bi;
    const fg::tensor<bool> yb = af > bf;
    const fg::shape want_shape(out.begin(), out.end());
    REQUIRE(yf.shape() == want_shape);
    REQUIRE(yd.shape() == want_shape);
    REQUIRE(yi.shape() == want_shape);
    REQUIRE(yb.shape() == want_shape);
    std::size_t bad = 0;
    for_each_index(out, [&](const std::vector<std::size_t>& i, std::size_t k) {
      const std::size_t ia = source_index(da, i), ib = source_index(db, i);
      const double a = af.data()[ia], b = bf.data()[ib];
      const double rf = a * b + a - b / (b * b + 1);
      const double a2 = ad.data()[ia], b2 = bd.data()[ib];
      const double rd = std::exp(a2) * b2 - std::sin(a2 - b2);
      bad += std::fabs(yf.data()[k] - rf) > 1e-5 * std::max(1.0, std::fabs(rf));
      bad += std::fabs(yd.data()[k] - rd) > 1e-14 * std::max(1.0, std::fabs(rd));
      bad += yi.data()[k] != ai.data()[ia] * bi.data()[ib] - ai.data()[ia] + 3 * bi.data()[ib];
      bad += yb.data()[k] != (a > b);
    });
    CHECK(bad == 0);
  }
}

TEST_CASE("a three-operand chain with different broadcast patterns matches the reference loop", "[broadcast]") {
  const unsigned seed = 99;
  INFO("seed " << seed);
  std::mt19937 gen(seed);
  const dims_t da = {4, 1, 37}, db = {5, 37}, dc = {4, 5, 1};
  const fg::tensor<float> a = random_tensor<float>(da, gen), b = random_tensor<float>(db, gen),
                          c = random_tensor<float>(dc, gen);
  const fg::tensor<float> y = a * b + fg::exp(c) - b / (1 + a * a) + fg::where(c > 0, a, b);
  REQUIRE(y.shape() == fg::shape{4, 5, 37});
  for_each_index({4, 5, 37}, [&](const std::vector<std::size_t>& i, std::size_t k) {
    const double av = a.data()[source_index(da, i)], bv = b.data()[source_index(db, i)],
                 cv = c.data()[source_index(dc, i)];
    const double ref = av * bv + std::exp(cv) - bv / (1 + av * av) + (cv > 0 ? av : bv);
    CHECK(y.data()[k] == Approx(ref).epsilon(1e-5).margin(1e-6));
  });
}

TEST_CASE("a one-element operand gives the same values in every shape it can take", "[broadcast]") {
  std::vector<float> v(3 * 37);
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = 0.25f * static_cast<float>(k) - 7.f;
  const fg::tensor<float> x(fg::shape{3, 37}, v);
  const float s = 1.75f;
  // Flat path: a C++ scalar, a rank-0 tensor, shapes (1,) and (1, 1). Row path: (3, 1) and (37,).
  const std::vector<fg::tensor<float>> results = {
      x * s - s,
      x * fg::tensor<float>(s) - fg::tensor<float>(s),
      x * fg::fill<float>({1}, s) - fg::fill<float>({1}, s),
      x * fg::fill<float>({1, 1}, s) - fg::fill<float>({1, 1}, s),
      x * fg::fill<float>({3, 1}, s) - fg::fill<float>({3, 1}, s),
      x * fg::fill<float>({37}, s) - fg::fill<float>({37}, s),
  };
  for (std::size_t r = 0; r < results.size(); ++r) {
    INFO("form " << r);
    REQUIRE(results[r].shape() == fg::shape{3, 37});
    for (std::size_t k = 0; k < v.size(); ++k) CHECK(results[r].data()[k] == v[k] * s - s);
  }
}

TEST_CASE("a chain of 12 ops with broadcast operands and scalars is one pass and one allocation", "[fusion]") {
  const unsigned seed = 4242;
  INFO("seed " << seed);
  std::mt19937 gen(seed);
  const dims_t da = {64, 1}, db = {1, 50};
  const fg::tensor<float> a = random_tensor<float>(da, gen), b = random_tensor<float>(db, gen);
  const fg::tensor<float> c = 0.5f;
  auto& counters = fg::core::counters();
  const auto passes = counters.passes, allocs = counters.allocations;
  const fg::tensor<float> y = fg::exp(a) * b + 3 * fg::sin(a - b) / (1 + fg::square(b)) - fg::tanh(a) * 0.5f +
                              fg::sqrt(fg::abs(b) + c) + fg::sigmoid(a * b) - 2;
  CHECK(counters.passes - passes == 1);
  CHECK(counters.allocations - allocs == 1);
  REQUIRE(y.shape() == fg::shape{64, 50});
  for_each_index({64, 50}, [&](const std::vector<std::size_t>& i, std::size_t k) {
    const double av = a.data()[i[0]], bv = b.data()[i[1]];
    const double ref = std::exp(av) * bv + 3 * std::sin(av - bv) / (1 + bv * bv) - std::tanh(av) * 0.5 +
                       std::sqrt(std::fabs(bv) + 0.5) + 1 / (1 + std::exp(-av * bv)) - 2;
    CHECK(y.data()[k] == Approx(ref).epsilon(1e-5).margin(1e-5));
  });
}

TEST_CASE("a broadcasting integer chain is also one pass and one allocation", "[fusion]") {
  const fg::tensor<int> a = {{1}, {-2}, {3}};
  const fg::tensor<int> b = {{4, -5, 6, 0}};
  auto& counters = fg::core::counters();
  const auto passes = counters.passes, allocs = counters.allocations;
  const fg::tensor<int> y = (a * b + 2) % 5 - fg::abs(b) * 3 + fg::maximum(a, b) / 2 - fg::square(a - 1) + 7;
  CHECK(counters.passes - passes == 1);
  CHECK(counters.allocations - allocs == 1);
  const auto fmod_ref = [](int p, int q) { return ((p % q) + q) % q; };
  const auto fdiv_ref = [](int p, int q) { return p >= 0 ? p / q : -((-p + q - 1) / q); };
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 4; ++j) {
      const int av = a.data()[i], bv = b.data()[j];
      CHECK(y.data()[i * 4 + j] ==
            fmod_ref(av * bv + 2, 5) - std::abs(bv) * 3 + fdiv_ref(std::max(av, bv), 2) - (av - 1) * (av - 1) + 7);
    }
}
