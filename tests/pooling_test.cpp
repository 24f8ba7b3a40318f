// fg::max_pool2d, fg::avg_pool2d, their gradients (max_pool2d_grad, max_pool2d_grad_grad,
// avg_pool2d_grad) and the global pools: values against TensorFlow 2.21
// (tests/reference/conv_pool_values.py made them) with ties, SAME windows overhanging the border
// and explicit pads; float32 against float64; gradients against central differences, first and
// second order; errors that record nothing.
#include <catch2/catch.hpp>
#include <cmath>
#include <fusegrad/eager/pooling.hpp>
#include <random>
#include <vector>

#include "conv_pool_helpers.hpp"

using namespace fg_test;

// TensorFlow 2.21's values (float64, CPU), printed by tests/reference/conv_pool_values.py.
// clang-format off
namespace tf {
// max_pool2d ties 2x2 stride 2, shape (1, 2, 2, 1)
const std::vector<double> max_pool2d_ties_2x2_stride_2 = {3, 3, 5, 5};
// max_pool2d ties 2x2 stride 2: gradient, shape (1, 4, 4, 1)
const std::vector<double> max_pool2d_ties_2x2_stride_2_gradient = {
    0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 4, 0, 3, 0, 0, 0};
// max_pool2d ties 3x3 stride 1, shape (1, 2, 2, 1)
const std::vector<double> max_pool2d_ties_3x3_stride_1 = {5, 5, 5, 5};
// max_pool2d ties 3x3 stride 1: gradient, shape (1, 4, 4, 1)
const std::vector<double> max_pool2d_ties_3x3_stride_1_gradient = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0};
// max_pool2d 3x3 stride 2 SAME, shape (1, 3, 3, 2)
const std::vector<double> max_pool2d_3x3_stride_2_same = {
    -0.5, -0.75, -0.5, -0.625, -0.625, -0.625, -1.125, -0.5, -1, -0.625, -0.875, -0.625, -0.75, -0.875, -0.625,
    -0.875, -0.625, -1};
// max_pool2d 3x3 stride 2 SAME: gradient, shape (1, 6, 5, 2)
const std::vector<double> max_pool2d_3x3_stride_2_same_gradient = {
    0, 0, -1.5, 0, 0, 0, 1.5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -0.25, -0.75, 0, 0, 0, -1.25, 0, 0, 0,
    0.5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1.5, 1.25, 0, 0, 1.5, -0.5, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0};
// MaxPoolGradGrad 3x3 stride 2 SAME, shape (1, 3, 3, 2)
const std::vector<double> maxpoolgradgrad_3x3_stride_2_same = {
    0.5, 1.25, 0.5, 2, 1.25, 2, 0, -1.5, 2, 2, -1.5, 2, -0.75, 0.75, 0, 0.75, 0, 1.5};
// max_pool2d explicit pads, shape (1, 2, 2, 1)
const std::vector<double> max_pool2d_explicit_pads = {-0.875, 0.875, 1.75, 0.75};
// avg_pool2d 3x3 stride 2 SAME, shape (1, 3, 2, 2)
const std::vector<double> avg_pool2d_3x3_stride_2_same = {
    0.479166666667, -0.458333333333, 0.6875, -0.25, 0.708333333333, -0.833333333333, 0.3125, -0.625,
    0.333333333333, 0, -0.0625, -0.09375};
// avg_pool2d 3x3 stride 2 SAME: gradient, shape (1, 5, 4, 2)
const std::vector<double> avg_pool2d_3x3_stride_2_same_gradient = {
    -0.25, -0.125, -0.25, -0.125, -0.25, 0.0625, 0, 0.1875, -0.0833333333333, -0.236111111111, -0.0833333333333,
    -0.236111111111, -0.125, 0.0347222222222, -0.0416666666667, 0.270833333333, 0.166666666667, -0.111111111111,
    0.166666666667, -0.111111111111, 0.125, -0.0277777777778, -0.0416666666667, 0.0833333333333, 0.375,
    -0.319444444444, 0.375, -0.319444444444, 0.208333333333, -0.173611111111, -0.166666666667, 0.145833333333,
    0.208333333333, -0.208333333333, 0.208333333333, -0.208333333333, 0.0833333333333, -0.145833333333, -0.125,
    0.0625};
}  // namespace tf
// clang-format on

TEMPLATE_TEST_CASE("max_pool2d gives a window's gradient to its first maximum in row-major order, as TensorFlow",
                   "[pooling][max][ties]", float, double) {
  using T = TestType;
  const fg::tensor<T> x = fg::reshape(fg::tensor<T>({1, 3, 3, 0, 3, 2, 1, 3, 0, 0, 5, 5, 5, 5, 5, 1}), {1, 4, 4, 1});
  const fg::tensor<T> g = fg::reshape(fg::tensor<T>({1, 2, 3, 4}), {1, 2, 2, 1});
  {
    fg::gradient_tape tape;
    tape.watch(x);
    const fg::tensor<T> y = fg::max_pool2d(x, 2, 2, "VALID");
    check_close(y, {1, 2, 2, 1}, tf::max_pool2d_ties_2x2_stride_2, 0);
    check_close(tape.gradient(y, x, g), {1, 4, 4, 1}, tf::max_pool2d_ties_2x2_stride_2_gradient, 0);
  }
  {
    // overlapping windows: every window's first 5 is the same element, which gets all four
    fg::gradient_tape tape;
    tape.watch(x);
    const fg::tensor<T> y = fg::max_pool2d(x, 3, 1, "VALID");
    check_close(y, {1, 2, 2, 1}, tf::max_pool2d_ties_3x3_stride_1, 0);
    check_close(tape.gradient(y, x, g), {1, 4, 4, 1}, tf::max_pool2d_ties_3x3_stride_1_gradient, 0);
    check_close(fg::max_pool2d_grad(x, g, 3, 1, "VALID"), {1, 4, 4, 1}, tf::max_pool2d_ties_3x3_stride_1_gradient, 0);
  }
}

TEMPLATE_TEST_CASE("the first maximum takes the gradient in every channel, whole SIMD batches and the remainder",
                   "[pooling][max][ties]", float, double) {
  using T = TestType;
  // TensorFlow's tie case of the test above in each of 19 channels, scaled by the channel
  const std::vector<T> tie = {1, 3, 3, 0, 3, 2, 1, 3, 0, 0, 5, 5, 5, 5, 5, 1};
  const std::size_t C = 19;
  std::vector<T> xv(16 * C), gv(4 * C);
  for (std::size_t p = 0; p < 16; ++p)
    for (std::size_t c = 0; c < C; ++c) xv[p * C + c] = tie[p] * T(c + 1);
  for (std::size_t p = 0; p < 4; ++p)
    for (std::size_t c = 0; c < C; ++c) gv[p * C + c] = T(p + 1);
  const fg::tensor<T> x(fg::shape{1, 4, 4, C}, xv), g(fg::shape{1, 2, 2, C}, gv);
  for (const auto& [k, s, want] : {std::tuple{2, 2, tf::max_pool2d_ties_2x2_stride_2_gradient},
                                   std::tuple{3, 1, tf::max_pool2d_ties_3x3_stride_1_gradient}}) {
    const fg::tensor<T> dx = fg::max_pool2d_grad(x, g, k, s, "VALID");
    for (std::size_t p = 0; p < 16; ++p)
      for (std::size_t c = 0; c < C; ++c) {
        INFO("window " << k << ", pixel " << p << ", channel " << c);
        CHECK(dx.data()[p * C + c] == static_cast<T>(want[p]));
      }
  }
}

TEMPLATE_TEST_CASE("SAME max pooling skips the padding of windows that overhang the border, as TensorFlow",
                   "[pooling][max][padding]", float, double) {
  using T = TestType;
  // all values negative, so a padded zero would win; height 6 pads 0 before and 1 after
  const fg::tensor<T> x = -fg::abs(pattern<T>({1, 6, 5, 2}, 7, 29, 8)) - T(0.5);
  fg::gradient_tape tape;
  tape.watch(x);
  const fg::tensor<T> y = fg::max_pool2d(x, 3, 2, "SAME");
  check_close(y, {1, 3, 3, 2}, tf::max_pool2d_3x3_stride_2_same, tol<T>);
  const auto dy = pattern<T>({1, 3, 3, 2}, 3, 13, 4);
  check_close(tape.gradient(y, x, dy), {1, 6, 5, 2}, tf::max_pool2d_3x3_stride_2_same_gradient, tol<T>);
}

TEMPLATE_TEST_CASE("max_pool2d_grad_grad reads the gradient at each window's maximum, as TensorFlow's MaxPoolGradGrad",
                   "[pooling][max][second-order]", float, double) {
  using T = TestType;
  const fg::tensor<T> x = -fg::abs(pattern<T>({1, 6, 5, 2}, 7, 29, 8)) - T(0.5);
  const auto ddx = pattern<T>({1, 6, 5, 2}, 5, 17, 4);
  check_close(fg::max_pool2d_grad_grad(x, ddx, 3, 2, "SAME"), {1, 3, 3, 2}, tf::maxpoolgradgrad_3x3_stride_2_same,
              tol<T>);
  // ... and is the tape's gradient of max_pool2d_grad with respect to its incoming gradient
  const auto dy = pattern<T>({1, 3, 3, 2}, 3, 13, 4);
  fg::gradient_tape tape;
  tape.watch(dy);
  const fg::tensor<T> dx = fg::max_pool2d_grad(x, dy, 3, 2, "SAME");
  check_close(tape.gradient(dx, dy, ddx), {1, 3, 3, 2}, tf::maxpoolgradgrad_3x3_stride_2_same, tol<T>);
}

TEMPLATE_TEST_CASE("max_pool2d with explicit pads matches TensorFlow", "[pooling][max][padding]", float, double) {
  using T = TestType;
  check_close(fg::max_pool2d(pattern<T>({1, 4, 4, 1}, 7, 29, 8), 2, 2, {{1, 0}, {0, 1}}), {1, 2, 2, 1},
              tf::max_pool2d_explicit_pads, tol<T>);
}

TEMPLATE_TEST_CASE("SAME average pooling divides by the window's input elements only, as TensorFlow",
                   "[pooling][avg][padding]", float, double) {
  using T = TestType;
  const auto x = pattern<T>({1, 5, 4, 2}, 7, 29, 8);
  fg::gradient_tape tape;
  tape.watch(x);
  const fg::tensor<T> y = fg::avg_pool2d(x, 3, 2, "SAME");
  check_close(y, {1, 3, 2, 2}, tf::avg_pool2d_3x3_stride_2_same, tol<T>);
  const auto dy = pattern<T>({1, 3, 2, 2}, 3, 13, 4);
  check_close(tape.gradient(y, x, dy), {1, 5, 4, 2}, tf::avg_pool2d_3x3_stride_2_same_gradient, tol<T>);
  check_close(fg::avg_pool2d_grad({1, 5, 4, 2}, dy, 3, 2, "SAME"), {1, 5, 4, 2},
              tf::avg_pool2d_3x3_stride_2_same_gradient, tol<T>);
  // the first window (a padding row above, none to the left) averages the 2 x 3 elements it covers
  const double corner = (x.data()[0] + x.data()[2] + x.data()[4] + x.data()[8] + x.data()[10] + x.data()[12]) / 6.0;
  CHECK(std::abs(static_cast<double>(y.data()[0]) - corner) < 1e-6);
}

TEST_CASE("float32 and float64 pools agree on random inputs", "[pooling][float]") {
  std::mt19937_64 rng(5);
  // 11 channels: whole SIMD batches and a remainder; {2, 2, "SAME"} tiles the input
  const dtensor x = uniform_tensor({2, 9, 7, 11}, rng);
  const fg::tensor<float> xf = fg::cast<float>(x);
  for (const auto& [k, s, pad] : {std::tuple<fg::size2d, fg::size2d, const char*>{2, 2, "VALID"},
                                  {2, 2, "SAME"},
                                  {3, 2, "SAME"},
                                  {{3, 2}, {1, 2}, "SAME"},
                                  {{2, 4}, 3, "VALID"}}) {
    const dtensor y = fg::max_pool2d(x, k, s, pad), a = fg::avg_pool2d(x, k, s, pad);
    check_close(fg::max_pool2d(xf, k, s, pad), y.shape(), values(y), 1e-6);
    check_close(fg::avg_pool2d(xf, k, s, pad), a.shape(), values(a), 1e-6);
    const dtensor dy = uniform_tensor(y.shape(), rng);
    const dtensor dx = fg::max_pool2d_grad(x, dy, k, s, pad), da = fg::avg_pool2d_grad(x.shape(), dy, k, s, pad);
    check_close(fg::max_pool2d_grad(xf, fg::cast<float>(dy), k, s, pad), x.shape(), values(dx), 1e-6);
    check_close(fg::avg_pool2d_grad(x.shape(), fg::cast<float>(dy), k, s, pad), x.shape(), values(da), 1e-6);
  }
}

TEST_CASE("pool gradients match finite differences, first and second order", "[pooling][gradient]") {
  const std::uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  fg::testing::gradient_check_options o;
  o.second_order = true;
  o.seed = seed;
  using in = std::vector<dtensor>;
  // random values: ties and near-ties (closer than the step) have probability ~1e-10
  const dtensor x = uniform_tensor({2, 5, 6, 2}, rng);
  for (const auto& [k, s, pad] : {std::tuple<fg::size2d, fg::size2d, fg::padding_spec>{2, 2, "VALID"},
                                  {2, 2, "SAME"},
                                  {3, 2, "SAME"},
                                  {{3, 2}, 1, "SAME"},
                                  {2, 2, {{1, 0}, {1, 1}}}}) {
    auto r = fg::testing::check_gradients([&](const in& v) { return fg::max_pool2d(v[0], k, s, pad); }, {x}, o);
    {
      INFO("max_pool2d: " << r.report);
      CHECK(r.ok);
    }
    const dtensor y = fg::max_pool2d(x, k, s, pad);
    const dtensor dy = uniform_tensor(y.shape(), rng);
    r = fg::testing::check_gradients([&](const in& v) { return fg::max_pool2d_grad(x, v[0], k, s, pad); }, {dy}, o);
    {
      INFO("max_pool2d_grad: " << r.report);
      CHECK(r.ok);
    }
    r = fg::testing::check_gradients([&](const in& v) { return fg::max_pool2d_grad_grad(x, v[0], k, s, pad); }, {x}, o);
    {
      INFO("max_pool2d_grad_grad: " << r.report);
      CHECK(r.ok);
    }
    if (pad.k == fg::padding_spec::kind::explicit_pads) continue;
    r = fg::testing::check_gradients([&](const in& v) { return fg::avg_pool2d(v[0], k, s, pad); }, {x}, o);
    {
      INFO("avg_pool2d: " << r.report);
      CHECK(r.ok);
    }
    r = fg::testing::check_gradients([&](const in& v) { return fg::avg_pool2d_grad(x.shape(), v[0], k, s, pad); }, {dy},
                                     o);
    {
      INFO("avg_pool2d_grad: " << r.report);
      CHECK(r.ok);
    }
  }
}

TEST_CASE("a gradient penalty through avg_pool2d matches finite differences", "[pooling][avg][second-order]") {
  // penalty(x) = ||d loss / dx||^2 with loss = sum(c * avg_pool2d(x)^2)
  std::mt19937_64 rng(3);
  const dtensor x = uniform_tensor({1, 5, 4, 2}, rng), c = uniform_tensor({1, 3, 2, 2}, rng);
  auto penalty = [&](const dtensor& v) {
    fg::gradient_tape inner;
    inner.watch(v);
    const dtensor p = fg::avg_pool2d(v, 3, 2, "SAME");
    const dtensor g = inner.gradient(fg::reduce_sum(c * p * p), v);
    return dtensor(fg::reduce_sum(g * g));
  };
  fg::gradient_tape outer;
  outer.watch(x);
  const dtensor dx = outer.gradient(penalty(x), x);
  const dtensor fd = numeric_gradient([&](const dtensor& v) { return penalty(v).item(); }, x, 1e-5);
  check_close(dx, x.shape(), values(fd), 1e-6);
}

TEMPLATE_TEST_CASE("the global pools reduce height and width, as Keras's GlobalMaxPooling2D and GlobalAveragePooling2D",
                   "[pooling][global]", float, double) {
  using T = TestType;
  const auto x = pattern<T>({2, 3, 2, 2}, 7, 29, 8);
  const fg::tensor<T> m = fg::global_max_pool2d(x), a = fg::global_avg_pool2d(x, true);
  REQUIRE(m.shape() == fg::shape{2, 2});
  REQUIRE(a.shape() == fg::shape{2, 1, 1, 2});
  for (std::size_t n = 0; n < 2; ++n)
    for (std::size_t c = 0; c < 2; ++c) {
      double mx = -1e300, sum = 0;
      for (std::size_t p = 0; p < 6; ++p) {
        const double v = x.data()[(n * 6 + p) * 2 + c];
        mx = std::max(mx, v);
        sum += v;
      }
      CHECK(m.data()[n * 2 + c] == static_cast<T>(mx));
      CHECK(std::abs(a.data()[n * 2 + c] - sum / 6) < 1e-6);
    }
  CHECK_THROWS_WITH(fg::global_avg_pool2d(fg::reshape(x, {2, 6, 2})),
                    Catch::Contains("fg::global_avg_pool2d: input must be 4-D NHWC"));
}

TEST_CASE("bad pooling arguments throw invalid_argument errors naming the op and record nothing", "[pooling][errors]") {
  const dtensor x = pattern({1, 4, 4, 2}, 7, 29, 8), x3 = fg::reshape(x, {4, 4, 2});
  fg::gradient_tape tape;
  tape.watch(x);
  tape.watch(x3);
  CHECK_THROWS_MATCHES(fg::max_pool2d(x3, 2, 2, "VALID"), fg::shape_error,
                       Catch::Message("fg::max_pool2d: input must be 4-D NHWC (batch, height, width, channels), got "
                                      "shape (4, 4, 2)"));
  CHECK_THROWS_AS(fg::max_pool2d(x, 0, 1, "VALID"), fg::value_error);
  CHECK_THROWS_WITH(fg::avg_pool2d(x, 2, {0, 1}, "VALID"), Catch::Contains("fg::avg_pool2d: strides must be >= 1"));
  CHECK_THROWS_AS(fg::max_pool2d(x, 5, 1, "VALID"), fg::shape_error);
  CHECK_THROWS_WITH(fg::max_pool2d(x, {2, 5}, 1, "VALID"),
                    Catch::Contains("the window's width (5) exceeds the width of the input (4) with VALID padding"));
  CHECK_THROWS_WITH(fg::max_pool2d(x, 2, 2, "valid"), Catch::Contains("fg::max_pool2d: unknown padding \"valid\""));
  CHECK_THROWS_WITH(fg::avg_pool2d(x, 2, 2, {{1, 0}, {0, 0}}),
                    Catch::Contains("explicit pads are for max pooling only"));
  CHECK_THROWS_WITH(fg::max_pool2d(x, 2, 2, {{2, 0}, {0, 0}}), Catch::Contains("must each be smaller than the window"));
  CHECK_THROWS_WITH(fg::max_pool2d_grad(x, pattern({1, 3, 3, 2}, 3, 13, 4), 2, 2, "VALID"),
                    Catch::Contains("fg::max_pool2d_grad: the gradient has shape (1, 3, 3, 2)") &&
                        Catch::Contains("needs (1, 2, 2, 2)"));
  CHECK_THROWS_WITH(fg::max_pool2d_grad_grad(x, pattern({1, 2, 2, 2}, 3, 13, 4), 2, 2, "VALID"),
                    Catch::Contains("fg::max_pool2d_grad_grad: the gradient has shape (1, 2, 2, 2)"));
  CHECK_THROWS_AS(fg::avg_pool2d_grad({1, 4, 4}, pattern({1, 2, 2, 2}, 3, 13, 4), 2, 2, "VALID"), fg::shape_error);
  CHECK(tape.size() == 0);
}
