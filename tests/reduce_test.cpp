// Reductions against numpy: sum, mean, max, min, prod, all, any over no axis, one axis, several
// (negative) axes, with keepdims; argmax/argmin ties and NaN; a stable logsumexp; integer and
// empty reductions; axis errors; and fusion of the operand chain into the reduction pass.
#include <catch2/catch.hpp>
#include <fusegrad/fusegrad.hpp>

#include "test_helpers.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace {
using namespace fg_test;
/// One reduction call and numpy's answer.
struct reduce_row {
  std::string op;
  char source;  ///< 'x' or 'p' below
  fg::axes ax;
  bool keepdims;
  fg::shape shape;
  std::vector<float> want;
};

// x = ((np.arange(24) * 7 % 11) - 5).astype(np.float32).reshape(2, 3, 4) * 0.5
const std::vector<float> x_values = {-2.5f, 1.0f, -1.0f, 2.5f, 0.5f, -1.5f, 2.0f, 0.0f, -2.0f, 1.5f, -0.5f, -2.5f,
                                     1.0f, -1.0f, 2.5f, 0.5f, -1.5f, 2.0f, 0.0f, -2.0f, 1.5f, -0.5f, -2.5f, 1.0f};
// p = (1 + 0.1 * (np.arange(24) % 5) - 0.2).astype(np.float32).reshape(2, 3, 4)
const std::vector<float> p_values = {
    0.800000012f, 0.900000036f, 1.0f,        1.0999999f,   1.19999993f, 0.800000012f, 0.900000036f, 1.0f,
    1.0999999f,   1.19999993f,  0.800000012f, 0.900000036f, 1.0f,        1.0999999f,   1.19999993f, 0.800000012f,
    0.900000036f, 1.0f,         1.0999999f,   1.19999993f,  0.800000012f, 0.900000036f, 1.0f,        1.0999999f};

// numpy 2 on float32 arrays.
const std::vector<reduce_row> reduce_rows = {
    // np.sum(x, axis=None)
    {"sum", 'x', {}, false, {},
     {-1.5f}},
    // np.sum(x, axis=None, keepdims=True)
    {"sum", 'x', {}, true, {1, 1, 1},
     {-1.5f}},
    // np.sum(x, axis=0)
    {"sum", 'x', 0, false, {3, 4},
     {-1.5f, 0.0f, 1.5f, 3.0f, -1.0f, 0.5f, 2.0f, -2.0f, -0.5f, 1.0f, -3.0f, -1.5f}},
    // np.sum(x, axis=1)
    {"sum", 'x', 1, false, {2, 4},
     {-4.0f, 1.0f, 0.5f, 0.0f, 1.0f, 0.5f, 0.0f, -0.5f}},
    // np.sum(x, axis=1, keepdims=True)
    {"sum", 'x', 1, true, {2, 1, 4},
     {-4.0f, 1.0f, 0.5f, 0.0f, 1.0f, 0.5f, 0.0f, -0.5f}},
    // np.sum(x, axis=2)
    {"sum", 'x', 2, false, {2, 3},
     {0.0f, 1.0f, -3.5f, 3.0f, -1.5f, -0.5f}},
    // np.sum(x, axis=-1)
    {"sum", 'x', -1, false, {2, 3},
     {0.0f, 1.0f, -3.5f, 3.0f, -1.5f, -0.5f}},
    // np.sum(x, axis=(0, 2))
    {"sum", 'x', {0, 2}, false, {3},
     {3.0f, -0.5f, -4.0f}},
    // np.sum(x, axis=(0, 2), keepdims=True)
    {"sum", 'x', {0, 2}, true, {1, 3, 1},
     {3.0f, -0.5f, -4.0f}},
    // np.sum(x, axis=(-1, -3))
    {"sum", 'x', {-1, -3}, false, {3},
     {3.0f, -0.5f, -4.0f}},
    // np.sum(x, axis=(0, 1, 2))
    {"sum", 'x', {0, 1, 2}, false, {},
     {-1.5f}},
    // np.mean(x, axis=None)
    {"mean", 'x', {}, false, {},
     {-0.0625f}},
    // np.mean(x, axis=None, keepdims=True)
    {"mean", 'x', {}, true, {1, 1, 1},
     {-0.0625f}},
    // np.mean(x, axis=0)
    {"mean", 'x', 0, false, {3, 4},
     {-0.75f, 0.0f, 0.75f, 1.5f, -0.5f, 0.25f, 1.0f, -1.0f, -0.25f, 0.5f, -1.5f, -0.75f}},
    // np.mean(x, axis=1)
    {"mean", 'x', 1, false, {2, 4},
     {-1.33333337f, 0.333333343f, 0.166666672f, 0.0f, 0.333333343f, 0.166666672f, 0.0f, -0.166666672f}},
    // np.mean(x, axis=1, keepdims=True)
    {"mean", 'x', 1, true, {2, 1, 4},
     {-1.33333337f, 0.333333343f, 0.166666672f, 0.0f, 0.333333343f, 0.166666672f, 0.0f, -0.166666672f}},
    // np.mean(x, axis=2)
    {"mean", 'x', 2, false, {2, 3},
     {0.0f, 0.25f, -0.875f, 0.75f, -0.375f, -0.125f}},
    // np.mean(x, axis=-1)
    {"mean", 'x', -1, false, {2, 3},
     {0.0f, 0.25f, -0.875f, 0.75f, -0.375f, -0.125f}},
    // np.mean(x, axis=(0, 2))
    {"mean", 'x', {0, 2}, false, {3},
     {0.375f, -0.0625f, -0.5f}},
    // np.mean(x, axis=(0, 2), keepdims=True)
    {"mean", 'x', {0, 2}, true, {1, 3, 1},
     {0.375f, -0.0625f, -0.5f}},
    // np.mean(x, axis=(-1, -3))
    {"mean", 'x', {-1, -3}, false, {3},
     {0.375f, -0.0625f, -0.5f}},
    // np.mean(x, axis=(0, 1, 2))
    {"mean", 'x', {0, 1, 2}, false, {},
     {-0.0625f}},
    // np.max(x, axis=None)
    {"max", 'x', {}, false, {},
     {2.5f}},
    // np.max(x, axis=None, keepdims=True)
    {"max", 'x', {}, true, {1, 1, 1},
     {2.5f}},
    // np.max(x, axis=0)
    {"max", 'x', 0, false, {3, 4},
     {1.0f, 1.0f, 2.5f, 2.5f, 0.5f, 2.0f, 2.0f, 0.0f, 1.5f, 1.5f, -0.5f, 1.0f}},
    // np.max(x, axis=1)
    {"max", 'x', 1, false, {2, 4},
     {0.5f, 1.5f, 2.0f, 2.5f, 1.5f, 2.0f, 2.5f, 1.0f}},
    // np.max(x, axis=1, keepdims=True)
    {"max", 'x', 1, true, {2, 1, 4},
     {0.5f, 1.5f, 2.0f, 2.5f, 1.5f, 2.0f, 2.5f, 1.0f}},
    // np.max(x, axis=2)
    {"max", 'x', 2, false, {2, 3},
     {2.5f, 2.0f, 1.5f, 2.5f, 2.0f, 1.5f}},
    // np.max(x, axis=-1)
    {"max", 'x', -1, false, {2, 3},
     {2.5f, 2.0f, 1.5f, 2.5f, 2.0f, 1.5f}},
    // np.max(x, axis=(0, 2))
    {"max", 'x', {0, 2}, false, {3},
     {2.5f, 2.0f, 1.5f}},
    // np.max(x, axis=(0, 2), keepdims=True)
    {"max", 'x', {0, 2}, true, {1, 3, 1},
     {2.5f, 2.0f, 1.5f}},
    // np.max(x, axis=(-1, -3))
    {"max", 'x', {-1, -3}, false, {3},
     {2.5f, 2.0f, 1.5f}},
    // np.max(x, axis=(0, 1, 2))
    {"max", 'x', {0, 1, 2}, false, {},
     {2.5f}},
    // np.min(x, axis=None)
    {"min", 'x', {}, false, {},
     {-2.5f}},
    // np.min(x, axis=None, keepdims=True)
    {"min", 'x', {}, true, {1, 1, 1},
     {-2.5f}},
    // np.min(x, axis=0)
    {"min", 'x', 0, false, {3, 4},
     {-2.5f, -1.0f, -1.0f, 0.5f, -1.5f, -1.5f, 0.0f, -2.0f, -2.0f, -0.5f, -2.5f, -2.5f}},
    // np.min(x, axis=1)
    {"min", 'x', 1, false, {2, 4},
     {-2.5f, -1.5f, -1.0f, -2.5f, -1.5f, -1.0f, -2.5f, -2.0f}},
    // np.min(x, axis=1, keepdims=True)
    {"min", 'x', 1, true, {2, 1, 4},
     {-2.5f, -1.5f, -1.0f, -2.5f, -1.5f, -1.0f, -2.5f, -2.0f}},
    // np.min(x, axis=2)
    {"min", 'x', 2, false, {2, 3},
     {-2.5f, -1.5f, -2.5f, -1.0f, -2.0f, -2.5f}},
    // np.min(x, axis=-1)
    {"min", 'x', -1, false, {2, 3},
     {-2.5f, -1.5f, -2.5f, -1.0f, -2.0f, -2.5f}},
    // np.min(x, axis=(0, 2))
    {"min", 'x', {0, 2}, false, {3},
     {-2.5f, -2.0f, -2.5f}},
    // np.min(x, axis=(0, 2), keepdims=True)
    {"min", 'x', {0, 2}, true, {1, 3, 1},
     {-2.5f, -2.0f, -2.5f}},
    // np.min(x, axis=(-1, -3))
    {"min", 'x', {-1, -3}, false, {3},
     {-2.5f, -2.0f, -2.5f}},
    // np.min(x, axis=(0, 1, 2))
    {"min", 'x', {0, 1, 2}, false, {},
     {-2.5f}},
    // np.prod(p, axis=None)
    {"prod", 'p', {}, false, {},
     {0.646175742f}},
    // np.prod(p, axis=None, keepdims=True)
    {"prod", 'p', {}, true, {1, 1, 1},
     {0.646175742f}},
    // np.prod(p, axis=0)
    {"prod", 'p', 0, false, {3, 4},
     {0.800000012f, 0.98999995f, 1.19999993f, 0.879999936f, 1.07999992f, 0.800000012f, 0.98999995f,
      1.19999993f, 0.879999936f, 1.07999992f, 0.800000012f, 0.98999995f}},
    // np.prod(p, axis=1)
    {"prod", 'p', 1, false, {2, 4},
     {1.05599988f, 0.863999963f, 0.720000029f, 0.98999995f, 0.720000029f, 0.98999995f, 1.31999981f,
      1.05599988f}},
    // np.prod(p, axis=1, keepdims=True)
    {"prod", 'p', 1, true, {2, 1, 4},
     {1.05599988f, 0.863999963f, 0.720000029f, 0.98999995f, 0.720000029f, 0.98999995f, 1.31999981f,
      1.05599988f}},
    // np.prod(p, axis=2)
    {"prod", 'p', 2, false, {2, 3},
     {0.791999936f, 0.864000022f, 0.950399935f, 1.05599988f, 1.18799984f, 0.791999936f}},
    // np.prod(p, axis=-1)
    {"prod", 'p', -1, false, {2, 3},
     {0.791999936f, 0.864000022f, 0.950399935f, 1.05599988f, 1.18799984f, 0.791999936f}},
    // np.prod(p, axis=(0, 2))
    {"prod", 'p', {0, 2}, false, {3},
     {0.836351812f, 1.02643192f, 0.75271672f}},
    // np.prod(p, axis=(0, 2), keepdims=True)
    {"prod", 'p', {0, 2}, true, {1, 3, 1},
     {0.836351812f, 1.02643192f, 0.75271672f}},
    // np.prod(p, axis=(-1, -3))
    {"prod", 'p', {-1, -3}, false, {3},
     {0.836351812f, 1.02643192f, 0.75271672f}},
    // np.prod(p, axis=(0, 1, 2))
    {"prod", 'p', {0, 1, 2}, false, {},
     {0.646175742f}},
};

/// Runs the reduction named op.
template <class X>
fg::tensor<float> call_reduce(const std::string& op, const X& x, const fg::axes& ax, bool keepdims) {
  if (op == "sum") return fg::sum(x, ax, keepdims);
  if (op == "mean") return fg::mean(x, ax, keepdims);
  if (op == "max") return fg::max(x, ax, keepdims);
  if (op == "min") return fg::min(x, ax, keepdims);
  return fg::prod(x, ax, keepdims);
}

/// The axes of ax as text, for failure messages.
std::string axes_text(const fg::axes& ax) {
  if (ax.all) return "all";
  std::string s;
  for (long a : ax.list) s += std::to_string(a) + " ";
  return s;
}
}  // namespace

TEST_CASE("sum, mean, max, min and prod match numpy over every axis choice, with and without keepdims",
          "[reduce]") {
  const fg::tensor<float> x(fg::shape{2, 3, 4}, x_values);
  const fg::tensor<float> p(fg::shape{2, 3, 4}, p_values);
  for (const reduce_row& r : reduce_rows) {
    INFO(r.op << " over axes " << axes_text(r.ax) << (r.keepdims ? " keepdims" : ""));
    const fg::tensor<float>& src = r.source == 'x' ? x : p;
    // The tensor itself, and an expression over it (reduced in the fused pass).
    for (const fg::tensor<float>& y : {call_reduce(r.op, src, r.ax, r.keepdims),
                                       call_reduce(r.op, src * 1.f + 0.f, r.ax, r.keepdims)}) {
      CHECK(y.shape() == r.shape);
      REQUIRE(y.size() == r.want.size());
      for (std::size_t k = 0; k < y.size(); ++k) {
        if (r.op == "prod") CHECK(y.data()[k] == Approx(r.want[k]).epsilon(1e-6));
        else CHECK(y.data()[k] == r.want[k]);
      }
    }
  }
}

TEST_CASE("the reduce_ names are the same functions as the short ones", "[reduce]") {
  const fg::tensor<float> x(fg::shape{2, 3, 4}, x_values);
  CHECK(values(fg::reduce_sum(x, 1)) == values(fg::sum(x, 1)));
  CHECK(values(fg::reduce_mean(x, {0, 2})) == values(fg::mean(x, {0, 2})));
  CHECK(values(fg::reduce_max(x, -1)) == values(fg::max(x, -1)));
  CHECK(values(fg::reduce_min(x)) == values(fg::min(x)));
  CHECK(values(fg::reduce_prod(x, 0)) == values(fg::prod(x, 0)));
}

TEST_CASE("all and any reduce bool tensors over axes", "[reduce][bool]") {
  const fg::tensor<bool> b = {{true, true, false}, {true, true, true}};
  // np.all / np.any
  CHECK_FALSE(fg::all(b).item());
  CHECK(fg::any(b).item());
  CHECK(values(fg::all(b, 1)) == std::vector<bool>{false, true});
  CHECK(values(fg::all(b, 0)) == std::vector<bool>{true, true, false});
  CHECK(values(fg::any(b, -1)) == std::vector<bool>{true, true});
  CHECK(fg::reduce_all(b, {0, 1}, true).shape() == fg::shape{1, 1});
  const fg::tensor<bool> none = {{false, false}, {false, true}};
  CHECK(values(fg::reduce_any(none, 1)) == std::vector<bool>{false, true});
  CHECK(values(fg::any(none, 0, true)) == std::vector<bool>{false, true});
  CHECK(fg::any(none, 0, true).shape() == fg::shape{1, 2});
  // Over a comparison expression: fused.
  const fg::tensor<float> x = {-1.f, 2.f, 3.f};
  CHECK_FALSE(fg::all(x > 0).item());
  CHECK(fg::all(x > -2).item());
  CHECK(fg::any(x > 2.5f).item());
}

TEST_CASE("long reductions fold SIMD chunks exactly; NaN in the scalar tail propagates", "[reduce]") {
  std::vector<float> v(3001);
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = 0.5f * static_cast<float>(k) - 700.f;
  const fg::tensor<float> x(fg::shape{v.size()}, v);
  // Exact in float: multiples of 0.5 below 2^22. sum = 0.5 * 3001 * 3000 / 2 - 700 * 3001
  CHECK(fg::sum(x).item() == 2250750.f - 2100700.f);
  CHECK(fg::max(x).item() == 800.f);
  CHECK(fg::min(x).item() == -700.f);
  // NaN at positions the SIMD fold reads: see the NaN test below.
  for (std::size_t pos : {0u, 5u, 1500u, 2047u, 3000u}) {
    INFO("NaN at " << pos);
    std::vector<float> w = v;
    w[pos] = nan_f;
    const fg::tensor<float> y(fg::shape{w.size()}, w);
    CHECK(std::isnan(fg::sum(y).item()));
    if (pos == 3000) {
      CHECK(std::isnan(fg::max(y).item()));
      CHECK(std::isnan(fg::min(y).item()));
    }
  }
  std::vector<double> d(1037, -std::numeric_limits<double>::infinity());
  const fg::tensor<double> ninf(fg::shape{d.size()}, d);
  CHECK(fg::max(ninf).item() == -std::numeric_limits<double>::infinity());
  CHECK(fg::sum(ninf).item() == -std::numeric_limits<double>::infinity());
}

TEST_CASE("reductions over a broadcasting expression reduce the broadcast result", "[reduce][broadcast]") {
  const fg::tensor<int> a = {{1}, {2}, {3}};
  const fg::tensor<int> b = {{10, 20, 30, 40}};
  // np.sum(a + b, axis=0), np.sum(a + b, axis=1), np.sum(a + b)
  CHECK(values(fg::sum(a + b, 0)) == std::vector<int>{36, 66, 96, 126});
  CHECK(values(fg::sum(a + b, 1)) == std::vector<int>{104, 108, 112});
  CHECK(fg::sum(a + b).item() == 324);
  CHECK(values(fg::max(a * b, 0)) == std::vector<int>{30, 60, 90, 120});
  CHECK(values(fg::min(a - b, 1)) == std::vector<int>{-39, -38, -37});
  CHECK(values(fg::prod(a + b * 0, 0, true)) == std::vector<int>{6, 6, 6, 6});
}

TEST_CASE("integer sums, products and extrema are exact; integer mean divides the sum by the count",
          "[reduce][int]") {
  std::vector<std::int32_t> v(24);
  for (std::size_t k = 0; k < 24; ++k) v[k] = static_cast<std::int32_t>(k) - 10;
  const fg::tensor<std::int32_t> x(fg::shape{2, 3, 4}, v);
  // np.sum(np.arange(24).reshape(2, 3, 4) - 10, axis=...)
  CHECK(fg::sum(x).item() == 36);
  CHECK(values(fg::sum(x, 2)) == std::vector<std::int32_t>{-34, -18, -2, 14, 30, 46});
  CHECK(values(fg::sum(x, {0, 1})) == std::vector<std::int32_t>{0, 6, 12, 18});
  CHECK(values(fg::max(x, 1)) == std::vector<std::int32_t>{-2, -1, 0, 1, 10, 11, 12, 13});
  CHECK(values(fg::min(x, -1)) == std::vector<std::int32_t>{-10, -6, -2, 2, 6, 10});
  CHECK(fg::prod(fg::tensor<std::int32_t>{-2, 3, 7}).item() == -42);
  const fg::tensor<std::int64_t> big = {std::int64_t{1} << 40, std::int64_t{1} << 40, std::int64_t{3}};
  CHECK(fg::sum(big).item() == 2199023255555LL);
  CHECK(fg::max(big).item() == std::int64_t{1} << 40);
  // Non-negative integer means: the sum divided by the count, rounded down.
  CHECK(fg::mean(fg::tensor<std::int32_t>{1, 2, 3, 4}).item() == 2);
  CHECK(values(fg::mean(fg::tensor<std::int32_t>{{1, 2}, {7, 8}}, 1)) == std::vector<std::int32_t>{1, 7});
}

TEST_CASE("argmax and argmin return int64 indices, take the first of ties, and stop at the first NaN",
          "[reduce][arg]") {
  const fg::tensor<float> m = {{1.f, 3.f, 3.f, 2.f}, {5.f, 5.f, 0.f, 0.f}, {-1.f, -1.f, -1.f, -1.f}};
  // np.argmax(m, axis=1), np.argmin(m, axis=1), np.argmax(m, axis=0), np.argmin(m, axis=0)
  const fg::tensor<std::int64_t> a1 = fg::argmax(m, 1);
  CHECK(a1.dtype() == fg::dtype::int64);
  CHECK(values(a1) == std::vector<std::int64_t>{1, 0, 0});
  CHECK(values(fg::argmin(m, 1)) == std::vector<std::int64_t>{0, 2, 0});
  CHECK(values(fg::argmax(m, -1)) == std::vector<std::int64_t>{1, 0, 0});
  CHECK(values(fg::argmax(m)) == std::vector<std::int64_t>{1, 1, 0, 0});
  CHECK(values(fg::argmin(m, 0)) == std::vector<std::int64_t>{2, 2, 2, 2});
  // np.argmax([1, nan, 3, nan]) = 1, np.argmin([1, nan, -3]) = 1, np.argmax([nan, 5]) = 0, np.argmin([4, 2, nan]) = 2
  CHECK(fg::argmax(fg::tensor<float>{1.f, nan_f, 3.f, nan_f}).item() == 1);
  CHECK(fg::argmin(fg::tensor<float>{1.f, nan_f, -3.f}).item() == 1);
  CHECK(fg::argmax(fg::tensor<double>{std::nan(""), 5.0}).item() == 0);
  CHECK(fg::argmin(fg::tensor<float>{4.f, 2.f, nan_f}).item() == 2);
  // Integer tensors, rank 3, and an expression operand.
  std::vector<int> v(24);
  for (std::size_t k = 0; k < 24; ++k) v[k] = static_cast<int>((k * 7) % 11);
  const fg::tensor<int> t(fg::shape{2, 3, 4}, v);
  // np.argmax(np.arange(24).reshape(2, 3, 4) * 7 % 11, axis=1); np.argmin(-(...), axis=2)
  CHECK(values(fg::argmax(t, 1)) == std::vector<std::int64_t>{1, 2, 1, 0, 2, 1, 0, 2});
  CHECK(fg::argmax(t, 1).shape() == fg::shape{2, 4});
  CHECK(values(fg::argmin(-t, 2)) == std::vector<std::int64_t>{3, 2, 1, 2, 1, 0});
}

TEST_CASE("logsumexp is stable for large and small values and handles infinities", "[reduce][logsumexp]") {
  // m + log(sum(exp(x - m))) in float64, cast to float32: 1000 + log(2) = 1000.6931471805599
  CHECK(fg::logsumexp(fg::tensor<float>{1000.f, 1000.f}).item() == Approx(1000.6931471805599).epsilon(1e-7));
  CHECK(fg::logsumexp(fg::tensor<float>{-1000.f, -1000.f}).item() == Approx(-999.3068528194401).epsilon(1e-7));
  CHECK(fg::logsumexp(fg::tensor<double>{1000.0, -1000.0}).item() == 1000.0);
  CHECK(fg::logsumexp(fg::tensor<double>{1000.0, 1000.0}).item() == Approx(1000.6931471805599).epsilon(1e-15));
  const fg::tensor<float> m = {{1000.f, 1000.f, -1000.f}, {-1000.f, -1000.5f, -2000.f}, {1.f, 2.f, 3.f}};
  // Stable logsumexp of m over axis 1 and axis 0, in float64, then cast to float32
  const fg::tensor<float> r1 = fg::reduce_logsumexp(m, 1);
  CHECK(r1.shape() == fg::shape{3});
  CHECK(r1.data()[0] == Approx(1000.6932f).epsilon(1e-7));
  CHECK(r1.data()[1] == Approx(-999.52594f).epsilon(1e-7));
  CHECK(r1.data()[2] == Approx(3.407606f).epsilon(1e-6));
  const fg::tensor<float> r0 = fg::logsumexp(m, 0, true);
  CHECK(r0.shape() == fg::shape{1, 3});
  CHECK(values(r0) == std::vector<float>{1000.f, 1000.f, 3.f});
  CHECK(fg::logsumexp(m).item() == Approx(1000.6932f).epsilon(1e-7));
  // All -inf gives -inf; +inf gives +inf; NaN gives NaN.
  CHECK(fg::logsumexp(fg::tensor<float>{-inf_f, -inf_f}).item() == -inf_f);
  CHECK(fg::logsumexp(fg::tensor<float>{inf_f, 1.f}).item() == inf_f);
  CHECK(std::isnan(fg::logsumexp(fg::tensor<float>{nan_f, 1.f}).item()));
}

TEST_CASE("empty tensors: sums are 0, products 1, max -inf, min +inf, all true, any false", "[reduce][empty]") {
  const fg::tensor<float> e(fg::shape{0}, std::vector<float>{});
  const fg::tensor<float> e20(fg::shape{2, 0}, std::vector<float>{});
  CHECK(fg::sum(e).shape() == fg::shape{});
  CHECK(fg::sum(e).item() == 0.f);
  CHECK(fg::prod(e).item() == 1.f);
  CHECK(values(fg::sum(e20, 1)) == std::vector<float>{0.f, 0.f});
  CHECK(fg::sum(e20, 0).shape() == fg::shape{0});
  CHECK(std::isnan(fg::mean(e).item()));
  const fg::tensor<bool> eb(fg::shape{0}, std::vector<bool>{});
  CHECK(fg::all(eb).item());
  CHECK_FALSE(fg::any(eb).item());
  CHECK(fg::sum(fg::tensor<int>(fg::shape{0}, std::vector<int>{})).item() == 0);
  // Over an empty axis max and min give their identities, as TensorFlow's reduce_max and
  // reduce_min do (numpy raises): -inf and +inf, the lowest and highest integers; logsumexp
  // gives log(0) = -inf.
  CHECK(fg::max(e).item() == -inf_f);
  CHECK(values(fg::min(e20, 1)) == std::vector<float>{inf_f, inf_f});
  CHECK(values(fg::max(e20 * 2.f, 1, true)) == std::vector<float>{-inf_f, -inf_f});
  CHECK(fg::max(e20, 1, true).shape() == fg::shape{2, 1});
  CHECK(fg::logsumexp(e).item() == -inf_f);
  const fg::tensor<int> ei(fg::shape{0}, std::vector<int>{});
  CHECK(fg::max(ei).item() == std::numeric_limits<int>::lowest());
  CHECK(fg::min(ei).item() == std::numeric_limits<int>::max());
  // Reducing a non-empty axis of an empty tensor is fine: the result is empty.
  CHECK(fg::max(e20, 0).shape() == fg::shape{0});
  CHECK_THROWS_AS(fg::argmax(e), fg::shape_error);
}

TEST_CASE("an axis out of range throws fg::index_error naming the axis and the rank", "[reduce][error]") {
  const fg::tensor<float> x = fg::zeros<float>({2, 3, 4});
  CHECK_THROWS_AS(fg::sum(x, 3), fg::index_error);
  CHECK_THROWS_AS(fg::sum(x, 3), std::out_of_range);
  CHECK_THROWS_WITH(fg::sum(x, 3), Catch::Contains("reduce_sum") && Catch::Contains("axis 3") &&
                                       Catch::Contains("rank 3"));
  CHECK_THROWS_WITH(fg::max(x, {0, -4}), Catch::Contains("reduce_max") && Catch::Contains("axis -4") &&
                                             Catch::Contains("rank 3"));
  CHECK_THROWS_WITH(fg::mean(x * 2, 7), Catch::Contains("reduce_mean") && Catch::Contains("axis 7"));
  CHECK_THROWS_WITH(fg::argmax(x, 3),
                    Catch::Contains("argmax") && Catch::Contains("axis 3") && Catch::Contains("rank 3"));
  CHECK_THROWS_AS(fg::argmin(x, -4), fg::index_error);
  CHECK_THROWS_AS(fg::sum(fg::tensor<float>(1.f), 0), fg::index_error);
  CHECK_THROWS_AS(fg::argmax(fg::tensor<float>(1.f)), fg::shape_error);
}

TEST_CASE("an axis listed twice throws fg::shape_error, also when a negative axis names the same one",
          "[reduce][error]") {
  const fg::tensor<float> x = fg::zeros<float>({2, 3, 4});
  CHECK_THROWS_AS(fg::sum(x, {1, 1}), fg::shape_error);
  CHECK_THROWS_WITH(fg::sum(x, {1, 1}), Catch::Contains("reduce_sum") && Catch::Contains("twice"));
  CHECK_THROWS_AS(fg::prod(x, {1, -2}), fg::shape_error);
  CHECK_THROWS_WITH(fg::any(x > 0, {-1, 2}), Catch::Contains("reduce_any") && Catch::Contains("twice"));
}

TEST_CASE("sum of a chain with broadcasting and scalars is one pass and one allocation", "[reduce][fusion]") {
  std::vector<float> av(64), bv(50);
  for (std::size_t k = 0; k < av.size(); ++k) av[k] = -1.f + 2.f * static_cast<float>(k) / 63.f;
  for (std::size_t k = 0; k < bv.size(); ++k) bv[k] = 0.5f - static_cast<float>(k) / 49.f;
  const fg::tensor<float> a(fg::shape{64, 1}, av), b(fg::shape{1, 50}, bv);
  auto& c = fg::core::counters();
  auto passes = c.passes, allocs = c.allocations;
  const auto chain = fg::exp(a) * b + 3 * fg::sin(a - b) - fg::square(b) / 2 + fg::tanh(a * b) + 1;
  const fg::tensor<float> s = fg::sum(chain);
  CHECK(c.passes - passes == 1);
  CHECK(c.allocations - allocs == 1);
  double ref = 0;
  std::vector<double> row_ref(64, 0.0);
  for (std::size_t i = 0; i < 64; ++i)
    for (std::size_t j = 0; j < 50; ++j) {
      const double x = av[i], y = bv[j];
      const double e = std::exp(x) * y + 3 * std::sin(x - y) - y * y / 2 + std::tanh(x * y) + 1;
      ref += e;
      row_ref[i] += e;
    }
  CHECK(s.item() == Approx(ref).epsilon(1e-5));
  passes = c.passes;
  const fg::tensor<float> rows = fg::sum(chain, 1);
  CHECK(c.passes - passes == 1);
  REQUIRE(rows.shape() == fg::shape{64});
  for (std::size_t i = 0; i < 64; ++i) CHECK(rows.data()[i] == Approx(row_ref[i]).epsilon(1e-5));
  passes = c.passes;
  const fg::tensor<float> mx = fg::max(fg::exp(a) * b - fg::square(b), 0);
  CHECK(c.passes - passes == 1);
  CHECK(mx.shape() == fg::shape{50});
}

// NaN propagation through the SIMD fold, and the one-pass mean.

TEST_CASE("max and min propagate NaN from positions the SIMD fold reads", "[reduce][nan]") {
  // np.max / np.min of an array holding a NaN is NaN.
  for (std::size_t pos : {0u, 5u, 1500u, 2047u}) {
    INFO("NaN at " << pos);
    std::vector<float> w(3001, 1.f);
    w[pos] = nan_f;
    const fg::tensor<float> y(fg::shape{w.size()}, w);
    CHECK(std::isnan(fg::max(y).item()));
    CHECK(std::isnan(fg::min(y).item()));
    CHECK(std::isnan(fg::reduce_max(y * 2, 0).item()));
  }
  std::vector<double> d(64, 1.0);
  d[10] = std::nan("");
  CHECK(std::isnan(fg::max(fg::tensor<double>(fg::shape{64}, d)).item()));
}

TEST_CASE("mean of a chain over an axis is one pass", "[reduce][fusion]") {
  // fg::mean divides the fused sum by the count in a second elementwise pass over the output.
  std::vector<float> v(40 * 30);
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>(k % 17) * 0.25f;
  const fg::tensor<float> x(fg::shape{40, 30}, v);
  auto& c = fg::core::counters();
  const auto passes = c.passes;
  const fg::tensor<float> m = fg::mean(fg::exp(-x) * 2 + x, 1);
  CHECK(c.passes - passes == 1);
  for (std::size_t i = 0; i < 40; ++i) {
    double ref = 0;
    for (std::size_t j = 0; j < 30; ++j) ref += std::exp(-double(v[i * 30 + j])) * 2 + v[i * 30 + j];
    CHECK(m.data()[i] == Approx(ref / 30).epsilon(1e-5));
  }
}

TEST_CASE("reduce_mean of an empty tensor has a defined (empty) gradient, as reduce_sum's", "[reduce][gradient][errors]") {
  const fg::tensor<float> x(fg::shape{0}, std::vector<float>{});
  fg::gradient_tape tape({.persistent = true});
  tape.watch(x);
  const fg::tensor<float> m = fg::reduce_mean(x);
  CHECK(std::isnan(m.item()));
  const fg::tensor<float> gm = tape.gradient(m, x);
  REQUIRE(gm.defined());
  CHECK(gm.shape() == fg::shape{0});
  const fg::tensor<float> gs = tape.gradient(fg::reduce_sum(x), x);
  REQUIRE(gs.defined());
  CHECK(gs.shape() == fg::shape{0});
  // Over an empty axis of a (2, 0) tensor: a (2,) result of NaN and a (2, 0) gradient.
  const fg::tensor<float> y(fg::shape{2, 0}, std::vector<float>{});
  tape.watch(y);
  const fg::tensor<float> my = fg::reduce_mean(y, 1);
  CHECK(my.shape() == fg::shape{2});
  CHECK(tape.gradient(my, y).shape() == fg::shape{2, 0});
}

TEST_CASE("reduce_logsumexp's gradient is softmax, as TensorFlow's", "[reduce][logsumexp][gradient]") {
  // tests/reference/logsumexp_grads.py: d/dx sum(w * reduce_logsumexp(x, 1)) in TensorFlow 2.21.
  const fg::tensor<double> x = {{1.0, 2.0, 3.0}, {1000.0, 1000.0, 999.0}, {-1000.0, -999.0, -1001.0}, {0.5, -0.25, 4.0}};
  const fg::tensor<double> w = {1.0, -2.0, 0.5, 3.0};
  fg::gradient_tape tape;
  tape.watch(x);
  const fg::tensor<double> r = fg::reduce_logsumexp(x, 1);
  const fg::tensor<double> y = fg::reduce_sum(r * w);
  const fg::tensor<double> g = tape.gradient(y, x);
  const std::vector<double> want_r = {3.40760596444438, 1000.8619948040582, -998.5923940355556, 4.043501553930298};
  const std::vector<double> want_g = {0.09003057317038046,  0.2447284710547976,  0.6652409557748219,
                                      -0.8446375965030364,  -0.8446375965030364, -0.3107248069939272,
                                      0.12236423552739879,  0.3326204778874109,  0.045015286585190224,
                                      0.08673573902928633,  0.04097106204470827, 2.8722931989260054};
  REQUIRE(r.shape() == fg::shape{4});
  for (std::size_t i = 0; i < 4; ++i) CHECK(r.data()[i] == Approx(want_r[i]).epsilon(1e-15));
  REQUIRE(g.shape() == fg::shape{4, 3});
  for (std::size_t i = 0; i < 12; ++i) CHECK(g.data()[i] == Approx(want_g[i]).epsilon(1e-14));
  // One op on the tape, whatever it computes inside: the gradient of y reaches x through it.
  const fg::tensor<float> xf = fg::cast<float>(x);
  fg::gradient_tape outer;
  outer.watch(xf);
  fg::gradient_tape inner;
  inner.watch(xf);
  const fg::tensor<float> lse = fg::reduce_logsumexp(xf, 1, true);
  const fg::tensor<float> gi = inner.gradient(lse, xf);  // softmax, rows summing to 1
  for (std::size_t row = 0; row < 4; ++row)
    CHECK(gi.data()[3 * row] + gi.data()[3 * row + 1] + gi.data()[3 * row + 2] == Approx(1.f).epsilon(1e-6));
  // The softmax's own gradient (recorded by the outer tape) sums to 0 over each row of 1s.
  const fg::tensor<float> gg = outer.gradient(fg::reduce_sum(gi), xf);
  for (std::size_t i = 0; i < 12; ++i) CHECK(gg.data()[i] == Approx(0.f).margin(1e-6));
}

TEST_CASE("max and min share the gradient among ties, as TensorFlow's", "[reduce][gradient]") {
  // tests/reference/extremum_grads.py: TensorFlow 2.21 computes indicators / count * upstream,
  // in that order, so the values below are its float32 results bit for bit.
  const fg::tensor<float> x = {{1.f, 3.f, 3.f}, {2.f, 2.f, 2.f}, {5.f, 1.f, 0.f}};
  const fg::tensor<float> w = {0.7f, 1.3f, -2.0f};
  fg::gradient_tape tape({.persistent = true});
  tape.watch(x);
  const fg::tensor<float> ymax = fg::reduce_sum(fg::reduce_max(x, 1) * w);
  const fg::tensor<float> ymin = fg::reduce_sum(fg::reduce_min(x, 0, true) * w);
  check_values(tape.gradient(ymax, x), {3, 3},
               std::vector<float>{0.0f, 0.3499999940395355f, 0.3499999940395355f, 0.4333333373069763f,
                                  0.4333333373069763f, 0.4333333373069763f, -2.0f, -0.0f, -0.0f});
  check_values(tape.gradient(ymin, x), {3, 3},
               std::vector<float>{0.699999988079071f, 0.0f, -0.0f, 0.0f, 0.0f, -0.0f, 0.0f, 1.2999999523162842f, -2.0f});
}

TEST_CASE("reduce_logsumexp over an empty axis is log(0) = -inf, as TensorFlow's", "[reduce][empty]") {
  const fg::tensor<float> x(fg::shape{0}, std::vector<float>{});
  CHECK(fg::reduce_logsumexp(x).item() == -inf_f);
  // tf.reduce_logsumexp(tf.zeros([2, 0]), axis=1, keepdims=True): [[-inf], [-inf]]; its
  // gradient has x's shape, (2, 0).
  const fg::tensor<float> x20(fg::shape{2, 0}, std::vector<float>{});
  fg::gradient_tape tape;
  tape.watch(x20);
  const fg::tensor<float> y = fg::reduce_logsumexp(x20, 1, true);
  check_values(y, {2, 1}, std::vector<float>{-inf_f, -inf_f});
  CHECK(tape.gradient(fg::reduce_sum(y), x20).shape() == fg::shape{2, 0});
}

TEST_CASE("integer reduce_sum, reduce_prod and reduce_mean wrap around as two's complement", "[reduce][integer]") {
  using i32 = std::int32_t;
  using i64 = std::int64_t;
  constexpr i32 imax = std::numeric_limits<i32>::max(), imin = std::numeric_limits<i32>::min();
  CHECK(fg::reduce_sum(fg::tensor<i32>{imax, 1}).item() == imin);
  CHECK(fg::reduce_prod(fg::tensor<i32>{65536, 65536}).item() == 0);
  CHECK(fg::reduce_prod(fg::tensor<i32>{imax, 2}).item() == -2);
  // More than one chunk: 2000 * (2^31 - 1) = 1000 * 2^32 - 2000.
  CHECK(fg::reduce_sum(fg::fill<i32>({2000}, imax)).item() == -2000);
  // Along an axis, and fused with its operand.
  const fg::tensor<i32> m = {{imax, imax}, {imin, -1}};
  check_values(fg::reduce_sum(m, 1), {2}, std::vector<i32>{-2, imax});
  check_values(fg::reduce_sum(m, 0), {2}, std::vector<i32>{-1, imax - 1});
  check_values(fg::reduce_prod(m, 1), {2}, std::vector<i32>{1, imin});
  CHECK(fg::reduce_sum(m + 1).item() == imin + 1);  // 3 imin + 1
  // TensorFlow sums an integer mean in its own type: (imax + imax) / 2 is -2 / 2.
  CHECK(fg::reduce_mean(fg::tensor<i32>{imax, imax}).item() == -1);
  constexpr i64 lmax = std::numeric_limits<i64>::max(), lmin = std::numeric_limits<i64>::min();
  CHECK(fg::reduce_sum(fg::tensor<i64>{lmax, i64{1}}).item() == lmin);
  CHECK(fg::reduce_prod(fg::tensor<i64>{i64{1} << 32, i64{1} << 32}).item() == 0);
}

TEST_CASE("an integer reduce_mean over more elements than its type counts divides by the true count", "[reduce][integer]") {
  using i32 = std::int32_t;
  // 65536 x 65536 = 2^32 elements broadcast from two small operands (512 KB). The count 2^32 is
  // 0 as an int32: it must not become the divisor. The sum, -7 * 65536 (the -7 meets every
  // row), is far below the count in size, so the mean truncates to 0.
  // One fused pass over 2^32 elements: 2.4 s optimised, over 30 s under AddressSanitizer, whose
  // run (scripts/sanitizers.sh) gains nothing from it, so it runs in the main suite only.
#if !defined(__SANITIZE_ADDRESS__)
  const fg::tensor<i32> a = fg::zeros<i32>({65536, 1});
  std::vector<i32> row(65536, 0);
  row[3] = -7;
  const fg::tensor<i32> b(fg::shape{1, 65536}, row);
  CHECK(fg::reduce_mean(a + b).item() == 0);
#endif
  // The quotient past the type's range: -1 only for the smallest sum over a count of 2^31.
  constexpr i32 imin = std::numeric_limits<i32>::min();
  CHECK(fg::eager::integer_mean<i32>(imin, std::size_t{1} << 31) == -1);
  CHECK(fg::eager::integer_mean<i32>(imin + 1, std::size_t{1} << 31) == 0);
  CHECK(fg::eager::integer_mean<i32>(imin, (std::size_t{1} << 31) + 1) == 0);
  CHECK(fg::eager::integer_mean<i32>(458752, std::size_t{1} << 32) == 0);
  // In range: C++'s division, truncating toward zero.
  CHECK(fg::eager::integer_mean<i32>(-7, 2) == -3);
  CHECK(fg::eager::integer_mean<i32>(imin, 1) == imin);
  CHECK(fg::eager::integer_mean<std::int64_t>(std::numeric_limits<std::int64_t>::min(), 2) ==
        std::numeric_limits<std::int64_t>::min() / 2);
  CHECK(fg::eager::integer_mean<i32>(5, 0) == 0);
}
