// fg::conv2d, conv2d_backprop_input, conv2d_backprop_filter and conv2d_transpose: values against
// TensorFlow 2.21 (tests/reference/conv_pool_values.py made them) for strides, SAME with an odd
// total padding, dilations, a 1x1 filter and explicit pads; float32 (oneDNN) against float64
// (direct loops); gradients against central differences, first and second order, including a
// gradient penalty through conv2d and max_pool2d; errors that record nothing; concurrent use of
// the cached primitives.
#include <catch2/catch.hpp>
#include <cmath>
#include <fusegrad/eager/conv.hpp>
#include <fusegrad/eager/pooling.hpp>
#include <random>
#include <thread>
#include <tuple>
#include <vector>

#include "conv_pool_helpers.hpp"

using namespace fg_test;

// TensorFlow 2.21's values (float64, CPU), printed by tests/reference/conv_pool_values.py.
// clang-format off
namespace tf {
// conv2d stride 2 SAME, shape (2, 3, 3, 3)
const std::vector<double> conv2d_stride_2_same = {
    -1.3125, -3.85, 2.1625, 0.3875, -4.5125, 0.325, -0.525, -1.425, -0.6625, 3.025, -1.15, -3.6625, 4.425, -1.6125,
    -4.8, 3.125, -1.225, -3.9125, 1.775, 1.8875, -1.5625, 2.85, 3.05, -2.6875, 2.0625, 1.9, -1.5875, -0.625, 2.075,
    -0.45, -2.3625, 3.1, -2.3625, -0.45, 2.075, -0.625, -3.9, 2.2375, 3.15, -7.025, 4.1875, 4.475, -3.6875, 2.275,
    3.0125, -1.7, -1.6, 1.825, -2.275, -1.975, 2.6, -1.3375, -1.5125, 1.875};
// conv2d_backprop_input stride 2 SAME, shape (2, 6, 5, 2)
const std::vector<double> conv2d_backprop_input_stride_2_same = {
    -0.825, 0.075, -0.4, -1.425, 1.9, -0.5, -0.85, -1, -0.575, 1.2, 0.3, 1.2, -1.325, 0.5, -0.625, -1.125, -1.275,
    1.425, 1.05, 0.45, 0.65, -0.225, 1.125, 0.25, -1.575, -1.575, 0.25, 1.125, -0.225, 0.65, 0.45, 1.05, 1.425,
    -1.275, -1.125, -0.625, 0.5, -1.325, 1.2, 0.3, 0.475, -0.05, -0.85, 0.275, -0.775, 0.875, -3.025, 1.15, 1.875,
    -1.775, 0.6, 0.9, 1.25, -1.1, -0.975, -0.775, 1.625, 1.45, -0.925, -0.825, -0.675, 0.75, -0.225, 1.1, -0.225,
    -0.8, -1.975, 1.525, 1.85, -0.725, 0.75, 0.75, 1.075, -0.925, -0.825, -0.925, 1.45, 1.625, -0.775, -0.975,
    0.125, 0.3, 1.375, -0.975, -1.775, 1.875, 1.15, -3.025, 0.875, -0.775, 0.9, 0.6, -0.725, -1.075, 0.3, 1.2,
    -1.325, 0.5, -0.625, -1.125, -0.05, 0.475, 1.025, 0.675, 0.65, -0.225, 1.125, 0.25, -1.575, -1.575, 1.05, 0.45,
    -0.9, -0.9, 0.45, 1.05, 1.425, -1.275, -1.125, -0.625};
// conv2d_backprop_filter stride 2 SAME, shape (3, 3, 2, 3)
const std::vector<double> conv2d_backprop_filter_stride_2_same = {
    -0.25, 0.625, -1.75, -1.28125, -3, 3.8125, 4.1875, 4, 0.5625, 2.1875, 0.625, -4.1875, -2.0625, 1.25, 3.34375,
    -0.59375, 2.96875, -0.78125, 2.125, 4.25, 3.125, 3.8125, -3, -1.28125, -0.40625, 1.96875, 1.09375, -6.03125,
    0.40625, 3.59375, 2.65625, 0.3125, -5.28125, 2.3125, -6.125, -0.34375, 0.1875, -0.15625, -3.34375, -4.65625,
    0.90625, 0.78125, -1.09375, -1.40625, 1.53125, 1.4375, -4.84375, 1.0625, 0.40625, 0.875, 2.5625, -4.28125,
    2.09375, 0.75};
// conv2d dilation 2 SAME, shape (1, 6, 5, 2)
const std::vector<double> conv2d_dilation_2_same = {
    0.925, 0.8, 0.575, 1.325, -1.0625, -1.75, -1.1625, -0.4125, 0.9375, 0.75, 0.45, 0.2, -1.6, -1.9125, -1.0375,
    -0.6, 1.875, 1.5625, 0.7375, 2.175, -1.4625, -2.025, -2.425, -1.2375, 3.05, 2.1125, 0.9, 2.0875, -1.325,
    -2.0125, -2.2875, -1.35, 2.1875, 1.25, 1.7, 3.0125, -1.1625, -2.1, -2.3, -1.4875, 2.325, 1.1375, 1.3625, 1.925,
    -1.825, -3.7, -2.1375, -1.575, 2.525, 1.2125, 0.625, 0.9375, -0.35, -0.975, -2.0875, -1.2125, 1.375, 0.75,
    0.675, 0.925};
// conv2d stride 2 dilation 2 VALID, shape (1, 3, 3, 1)
const std::vector<double> conv2d_stride_2_dilation_2_valid = {
    2.3625, -0.8625, -0.825, -0.6375, -0.6, -0.5625, -0.375, -0.3375, -0.3};
// conv2d 1x1 VALID, shape (1, 3, 4, 2)
const std::vector<double> conv2d_1x1_valid = {
    1.4875, 0.175, 0.1875, 1, -1.1125, 0.0125, 0.4875, 0.1125, -1.175, -1.2375, 0.7875, 1.0375, -0.5125, 0.05,
    1.0875, 0.15, -0.575, -1.2, 1.3875, 1.075, 0.0875, 0.0875, -1.575, -1.2625};
// conv2d 1x1 stride 2 SAME, shape (1, 2, 2, 2)
const std::vector<double> conv2d_1x1_stride_2_same = {
    1.4875, 0.175, -1.1125, 0.0125, -0.575, -1.2, 0.0875, 0.0875};
// conv2d explicit pads, shape (1, 3, 4, 2)
const std::vector<double> conv2d_explicit_pads = {
    -0.1625, -0.425, -0.525, 1.075, -2.3375, -0.6875, -1, 1.7, -3.0875, -0.6625, -2.975, -0.6875, -2.8625, -0.7125,
    -1.775, 0.8, 1.1, 1.4125, 0.125, 2.0625, 1.325, 1.2625, 0.3375, 0.8375};
// conv2d explicit pads: d/dx, shape (1, 4, 5, 2)
const std::vector<double> conv2d_explicit_pads_d_dx = {
    0.975, -1.275, 0.675, 0.6, -0.275, -1.275, -0.575, 1.4, -0.575, 1.125, -0.625, -0.625, -0.275, -0.525, -0.6,
    -1.35, 0.625, -0.875, 0.2, -1.05, -0.625, -0.625, -0.35, 1.775, -0.825, 0.325, 0.175, 1.05, -0.175, 1.425,
    -1.275, 0.975, -0.05, 0.95, -0.9, 1.85, 1.3, 0.05, 0.55, 0.55};
// conv2d explicit pads: d/dw, shape (2, 3, 2, 2)
const std::vector<double> conv2d_explicit_pads_d_dw = {
    -5.4375, -1.90625, -0.90625, -3.25, 7.25, -0.96875, -0.90625, 8.5625, -3.71875, -1.53125, -0.15625, -2.4375,
    8.84375, -3.90625, -4.09375, 7.0625, -3.4375, 4.4375, 2.65625, -3.625, 2.59375, -6.125, -4.03125, 7.125};
// conv2d_transpose to 6x6, shape (1, 6, 6, 1)
const std::vector<double> conv2d_transpose_to_6x6 = {
    1.925, -0.7, 1.3125, 0.525, -1.4375, -0.425, -0.9625, 1.4, -0.6125, -0.175, 0.35, -1.025, 0.95, -1.05, -0.35,
    0.275, -1.9375, 0.15, 0.5, -0.0625, 0.1, -0.9125, -0.025, 0.05, -0.85, 0.025, -1.4875, -0.1, -1.2625, -0.225,
    -0.575, -0.8, -0.275, 0.1625, -0.4, -0.6875};
// conv2d_transpose to 5x5, shape (1, 5, 5, 1)
const std::vector<double> conv2d_transpose_to_5x5 = {
    1.4, -0.6125, -0.175, 0.35, -1.025, -1.05, -0.35, 0.275, -1.9375, 0.15, -0.0625, 0.1, -0.9125, -0.025, 0.05,
    0.025, -1.4875, -0.1, -1.2625, -0.225, -0.8, -0.275, 0.1625, -0.4, -0.6875};
// conv2d_transpose VALID to 7x7, shape (1, 7, 7, 1)
const std::vector<double> conv2d_transpose_valid_to_7x7 = {
    1.925, -0.7, 1.3125, 0.525, -1.4375, -0.425, -1.1, -0.9625, 1.4, -0.6125, -0.175, 0.35, -1.025, -0.275, 0.95,
    -1.05, -0.35, 0.275, -1.9375, 0.15, -0.8625, 0.5, -0.0625, 0.1, -0.9125, -0.025, 0.05, 0.425, -0.85, 0.025,
    -1.4875, -0.1, -1.2625, -0.225, -0.5625, -0.575, -0.8, -0.275, 0.1625, -0.4, -0.6875, -0.6875, -0.775, -0.525,
    -0.575, 0.3, -0.5, -0.6875, -0.6875};
// gradient penalty, shape ()
const std::vector<double> gradient_penalty = {270.414184766};
// gradient penalty: d/dw, shape (3, 3, 1, 2)
const std::vector<double> gradient_penalty_d_dw = {
    -53.447875, 32.937015625, -6.1884140625, 76.7589375, -204.555171875, -201.260570312, 26.225390625, 273.4761875,
    -222.768679687, -131.689203125, 115.382882813, 120.479984375, -51.41990625, -21.106078125, 196.686640625,
    79.6823046875, -167.930335938, 31.077078125};
}  // namespace tf
// clang-format on

TEMPLATE_TEST_CASE("conv2d with stride 2 and SAME padding matches TensorFlow, the odd padding row going after",
                   "[conv]", float, double) {
  using T = TestType;
  const auto x = pattern<T>({2, 6, 5, 2}, 7, 29, 8), w = pattern<T>({3, 3, 2, 3}, 5, 19, 10);
  // height 6, stride 2, window 3: 3 rows out, one padding row in all, after the input
  check_close(fg::conv2d(x, w, 2, "SAME"), {2, 3, 3, 3}, tf::conv2d_stride_2_same, tol<T>);
}

TEMPLATE_TEST_CASE("conv2d_backprop_input and conv2d_backprop_filter match TensorFlow's Conv2DBackprop ops",
                   "[conv][backprop]", float, double) {
  using T = TestType;
  const auto x = pattern<T>({2, 6, 5, 2}, 7, 29, 8), w = pattern<T>({3, 3, 2, 3}, 5, 19, 10);
  const auto dy = pattern<T>({2, 3, 3, 3}, 3, 13, 4);
  check_close(fg::conv2d_backprop_input({2, 6, 5, 2}, w, dy, 2, "SAME"), {2, 6, 5, 2},
              tf::conv2d_backprop_input_stride_2_same, tol<T>);
  check_close(fg::conv2d_backprop_filter(x, {3, 3, 2, 3}, dy, 2, "SAME"), {3, 3, 2, 3},
              tf::conv2d_backprop_filter_stride_2_same, tol<T>);
  // The tape's gradients of conv2d are these ops.
  fg::gradient_tape tape({.persistent = true});
  tape.watch(x);
  tape.watch(w);
  const fg::tensor<T> y = fg::conv2d(x, w, 2, "SAME");
  check_close(tape.gradient(y, x, dy), {2, 6, 5, 2}, tf::conv2d_backprop_input_stride_2_same, tol<T>);
  check_close(tape.gradient(y, w, dy), {3, 3, 2, 3}, tf::conv2d_backprop_filter_stride_2_same, tol<T>);
}

TEMPLATE_TEST_CASE("dilated conv2d matches TensorFlow, with SAME padding and with stride 2 and VALID",
                   "[conv][dilation]", float, double) {
  using T = TestType;
  check_close(fg::conv2d(pattern<T>({1, 6, 5, 1}, 7, 29, 8), pattern<T>({2, 3, 1, 2}, 5, 19, 10), 1, "SAME", 2),
              {1, 6, 5, 2}, tf::conv2d_dilation_2_same, tol<T>);
  check_close(fg::conv2d(pattern<T>({1, 7, 7, 1}, 7, 29, 8), pattern<T>({2, 2, 1, 1}, 5, 19, 10), 2, "VALID", 2),
              {1, 3, 3, 1}, tf::conv2d_stride_2_dilation_2_valid, tol<T>);
}

TEMPLATE_TEST_CASE("a 1x1 conv2d is a product over channels at each pixel, as in TensorFlow", "[conv]", float, double) {
  using T = TestType;
  const auto x = pattern<T>({1, 3, 4, 3}, 7, 29, 8), w = pattern<T>({1, 1, 3, 2}, 5, 19, 10);
  check_close(fg::conv2d(x, w, 1, "VALID"), {1, 3, 4, 2}, tf::conv2d_1x1_valid, tol<T>);
  check_close(fg::conv2d(x, w, 2, "SAME"), {1, 2, 2, 2}, tf::conv2d_1x1_stride_2_same, tol<T>);
  // and equals the matrix product of the pixels with the filter matrix
  const fg::tensor<T> m = fg::matmul(fg::reshape(x, {12, 3}), fg::reshape(w, {3, 2}));
  check_close(fg::reshape(fg::conv2d(x, w, 1, "VALID"), {12, 2}), {12, 2}, as_doubles(m), tol<T>);
}

TEMPLATE_TEST_CASE("conv2d with explicit pads and strides {2, 1} matches TensorFlow, gradients too", "[conv][padding]",
                   float, double) {
  using T = TestType;
  const auto x = pattern<T>({1, 4, 5, 2}, 7, 29, 8), w = pattern<T>({2, 3, 2, 2}, 5, 19, 10);
  const fg::padding_spec pads({1, 2}, {0, 1});
  fg::gradient_tape tape({.persistent = true});
  tape.watch(x);
  tape.watch(w);
  const fg::tensor<T> y = fg::conv2d(x, w, {2, 1}, {{1, 2}, {0, 1}});
  check_close(y, {1, 3, 4, 2}, tf::conv2d_explicit_pads, tol<T>);
  const auto dy = pattern<T>({1, 3, 4, 2}, 3, 13, 4);
  check_close(tape.gradient(y, x, dy), {1, 4, 5, 2}, tf::conv2d_explicit_pads_d_dx, tol<T>);
  check_close(tape.gradient(y, w, dy), {2, 3, 2, 2}, tf::conv2d_explicit_pads_d_dw, tol<T>);
  check_close(fg::conv2d_backprop_filter(x, {2, 3, 2, 2}, dy, {2, 1}, pads), {2, 3, 2, 2},
              tf::conv2d_explicit_pads_d_dw, tol<T>);
}

TEMPLATE_TEST_CASE("conv2d_transpose with HWOI filters matches TensorFlow for both output sizes SAME allows, and VALID",
                   "[conv][transpose]", float, double) {
  using T = TestType;
  const auto x = pattern<T>({1, 3, 3, 2}, 7, 29, 8), w = pattern<T>({3, 3, 1, 2}, 5, 19, 10);
  check_close(fg::conv2d_transpose(x, w, {1, 6, 6, 1}, 2, "SAME"), {1, 6, 6, 1}, tf::conv2d_transpose_to_6x6, tol<T>);
  check_close(fg::conv2d_transpose(x, w, {1, 5, 5, 1}, 2), {1, 5, 5, 1}, tf::conv2d_transpose_to_5x5, tol<T>);
  check_close(fg::conv2d_transpose(x, w, {1, 7, 7, 1}, 2, "VALID"), {1, 7, 7, 1}, tf::conv2d_transpose_valid_to_7x7,
              tol<T>);
}

TEST_CASE("float32 convolutions (oneDNN) agree with float64 ones (direct loops) on random inputs", "[conv][float]") {
  std::mt19937_64 rng(7);
  struct config {
    fg::size2d strides, dilations;
    fg::padding_spec padding;
  };
  const std::vector<config> configs = {
      {1, 1, "SAME"}, {2, 1, "SAME"}, {{2, 3}, 1, "VALID"}, {1, 2, "SAME"}, {2, {1, 2}, {{2, 0}, {1, 3}}}};
  for (const config& c : configs) {
    const dtensor x = uniform_tensor({3, 11, 9, 5}, rng), w = uniform_tensor({3, 4, 5, 6}, rng);
    const fg::tensor<float> xf = fg::cast<float>(x), wf = fg::cast<float>(w);
    const dtensor y = fg::conv2d(x, w, c.strides, c.padding, c.dilations);
    check_close(fg::conv2d(xf, wf, c.strides, c.padding, c.dilations), y.shape(), values(y), 1e-5);
    const dtensor dy = uniform_tensor(y.shape(), rng);
    const fg::tensor<float> dyf = fg::cast<float>(dy);
    const dtensor dx = fg::conv2d_backprop_input(x.shape(), w, dy, c.strides, c.padding, c.dilations);
    check_close(fg::conv2d_backprop_input(x.shape(), wf, dyf, c.strides, c.padding, c.dilations), dx.shape(),
                values(dx), 1e-5);
    const dtensor dw = fg::conv2d_backprop_filter(x, w.shape(), dy, c.strides, c.padding, c.dilations);
    check_close(fg::conv2d_backprop_filter(xf, w.shape(), dyf, c.strides, c.padding, c.dilations), dw.shape(),
                values(dw), 1e-5);
  }
}

TEST_CASE("conv2d and its backprops have gradients that match finite differences, first and second order",
          "[conv][gradient]") {
  const std::uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  fg::testing::gradient_check_options o;
  o.second_order = true;
  o.seed = seed;
  using in = std::vector<dtensor>;
  const dtensor x = uniform_tensor({2, 5, 4, 2}, rng), w = uniform_tensor({3, 2, 2, 3}, rng);
  const fg::padding_spec pads({1, 0}, {2, 1});
  for (const auto& [strides, padding, dilations] : {std::tuple<fg::size2d, fg::padding_spec, fg::size2d>{1, "SAME", 1},
                                                    {2, "SAME", 1},
                                                    {{2, 1}, "VALID", {1, 2}},
                                                    {{1, 2}, pads, 1}}) {
    const dtensor y = fg::conv2d(x, w, strides, padding, dilations);
    const dtensor dy = uniform_tensor(y.shape(), rng);
    auto r = fg::testing::check_gradients(
        [&](const in& v) { return fg::conv2d(v[0], v[1], strides, padding, dilations); }, {x, w}, o);
    {
      INFO("conv2d: " << r.report);
      CHECK(r.ok);
    }
    r = fg::testing::check_gradients(
        [&](const in& v) { return fg::conv2d_backprop_input(x.shape(), v[0], v[1], strides, padding, dilations); },
        {w, dy}, o);
    {
      INFO("conv2d_backprop_input: " << r.report);
      CHECK(r.ok);
    }
    r = fg::testing::check_gradients(
        [&](const in& v) { return fg::conv2d_backprop_filter(v[0], w.shape(), v[1], strides, padding, dilations); },
        {x, dy}, o);
    {
      INFO("conv2d_backprop_filter: " << r.report);
      CHECK(r.ok);
    }
  }
  const dtensor t = uniform_tensor({1, 3, 3, 2}, rng), f = uniform_tensor({3, 3, 1, 2}, rng);
  const auto r = fg::testing::check_gradients(
      [&](const in& v) {
        return fg::conv2d_transpose(v[0], v[1], {1, 6, 6, 1}, 2, "SAME");
      },
      {t, f}, o);
  {
    INFO("conv2d_transpose: " << r.report);
    CHECK(r.ok);
  }
}

TEST_CASE("a gradient penalty through conv2d and max_pool2d matches TensorFlow and finite differences",
          "[conv][pooling][gradient][second-order]") {
  // penalty(w) = ||d loss / dx||^2, loss = sum(c * max_pool2d(conv2d(x, w))^2)
  const dtensor x = pattern({1, 6, 6, 1}, 7, 29, 8), w = pattern({3, 3, 1, 2}, 5, 19, 10);
  const dtensor c = pattern({1, 3, 3, 2}, 3, 13, 4);
  auto penalty = [&](const dtensor& wv) {
    fg::gradient_tape inner;
    inner.watch(x);
    const dtensor p = fg::max_pool2d(fg::conv2d(x, wv, 1, "SAME"), 2, 2, "VALID");
    const dtensor loss = fg::reduce_sum(c * p * p);
    const dtensor gx = inner.gradient(loss, x);
    return dtensor(fg::reduce_sum(gx * gx));
  };
  fg::gradient_tape outer;
  outer.watch(w);
  const dtensor pen = penalty(w);
  const dtensor dw = outer.gradient(pen, w);
  check_close(pen, {}, tf::gradient_penalty, 1e-9);
  check_close(dw, {3, 3, 1, 2}, tf::gradient_penalty_d_dw, 1e-9);
  const dtensor fd = numeric_gradient([&](const dtensor& v) { return penalty(v).item(); }, w, 1e-5);
  check_close(dw, {3, 3, 1, 2}, values(fd), 1e-6);
}

TEST_CASE("bad convolution arguments throw invalid_argument errors naming the op and record nothing",
          "[conv][errors]") {
  const dtensor x = pattern({1, 4, 4, 2}, 7, 29, 8), w = pattern({3, 3, 2, 3}, 5, 19, 10);
  const dtensor x3 = fg::reshape(x, {4, 4, 2}), w3 = fg::reshape(w, {9, 2, 3});
  fg::gradient_tape tape;
  tape.watch(x);
  tape.watch(w);
  tape.watch(x3);
  tape.watch(w3);
  CHECK_THROWS_MATCHES(fg::conv2d(x3, w, 1, "SAME"), fg::shape_error,
                       Catch::Message("fg::conv2d: input must be 4-D NHWC (batch, height, width, channels), got shape "
                                      "(4, 4, 2)"));
  CHECK_THROWS_WITH(fg::conv2d(x, w3, 1, "SAME"),
                    Catch::Contains("filters must be 4-D HWIO") && Catch::Contains("(9, 2, 3)"));
  CHECK_THROWS_AS(fg::conv2d(x, pattern({3, 3, 3, 3}, 5, 19, 10), 1, "SAME"), fg::shape_error);
  CHECK_THROWS_WITH(fg::conv2d(x, pattern({3, 3, 3, 3}, 5, 19, 10), 1, "SAME"),
                    Catch::Contains("the input has 2 channels (shape (1, 4, 4, 2)) but the filters take 3"));
  CHECK_THROWS_AS(fg::conv2d(x, w, 0, "SAME"), fg::value_error);
  CHECK_THROWS_WITH(fg::conv2d(x, w, {1, 0}, "SAME"), Catch::Contains("fg::conv2d: strides must be >= 1, got {1, 0}"));
  CHECK_THROWS_WITH(fg::conv2d(x, w, 1, "SAME", 0), Catch::Contains("dilations must be >= 1"));
  CHECK_THROWS_AS(fg::conv2d(x, pattern({5, 5, 2, 1}, 5, 19, 10), 1, "VALID"), fg::shape_error);
  CHECK_THROWS_WITH(fg::conv2d(x, pattern({5, 5, 2, 1}, 5, 19, 10), 1, "VALID"),
                    Catch::Contains("the window's height (5) exceeds the height of the input (4) with VALID padding") &&
                        Catch::Contains("use \"SAME\" padding"));
  CHECK_THROWS_WITH(fg::conv2d(x, w, 1, "VALID", 2), Catch::Contains("(5 after dilation)"));
  CHECK_THROWS_AS(fg::conv2d(x, w, 1, "same"), fg::value_error);
  CHECK_THROWS_WITH(fg::conv2d(x, w, 1, "same"), Catch::Contains("fg::conv2d: unknown padding \"same\""));
  CHECK_THROWS_WITH(fg::conv2d(x, w, 1, {{-1, 0}, {0, 0}}), Catch::Contains("explicit pads must be >= 0"));
  CHECK_THROWS_WITH(fg::conv2d_backprop_input({1, 4, 4, 2}, w, pattern({1, 3, 3, 3}, 3, 13, 4), 1, "SAME"),
                    Catch::Contains("fg::conv2d_backprop_input: out_backprop has shape (1, 3, 3, 3)") &&
                        Catch::Contains("gives (1, 4, 4, 3)"));
  CHECK_THROWS_WITH(fg::conv2d_backprop_filter(x, {3, 3, 2, 3}, pattern({1, 2, 2, 3}, 3, 13, 4), 1, "SAME"),
                    Catch::Contains("fg::conv2d_backprop_filter: out_backprop has shape (1, 2, 2, 3)"));
  CHECK_THROWS_WITH(
      fg::conv2d_transpose(pattern({1, 3, 3, 2}, 7, 29, 8), pattern({3, 3, 1, 2}, 5, 19, 10), {1, 7, 7, 1}, 2, "SAME"),
      Catch::Contains("fg::conv2d_transpose: the input has shape (1, 3, 3, 2) but output_shape (1, 7, 7, 1)") &&
          Catch::Contains("needs an input of shape (1, 4, 4, 2)"));
  CHECK_THROWS_WITH(
      fg::conv2d_transpose(pattern({1, 3, 3, 2}, 7, 29, 8), pattern({3, 3, 2, 1}, 5, 19, 10), {1, 6, 6, 1}, 2, "SAME"),
      Catch::Contains("HWOI"));
  CHECK_THROWS_AS(fg::conv2d(x, dtensor(), 1, "SAME"), fg::value_error);
  CHECK(tape.size() == 0);
}

TEST_CASE("empty batches and channels give empty results and zero gradients", "[conv][empty]") {
  const dtensor x(fg::shape{0, 5, 5, 2}, std::vector<double>{}), w = pattern({3, 3, 2, 3}, 5, 19, 10);
  CHECK(fg::conv2d(x, w, 2, "SAME").shape() == fg::shape{0, 3, 3, 3});
  const fg::tensor<float> xf = fg::cast<float>(x);
  const fg::tensor<float> df = fg::conv2d_backprop_filter(
      xf, {3, 3, 2, 3}, fg::tensor<float>(fg::shape{0, 3, 3, 3}, std::vector<float>{}), 2, "SAME");
  check_close(df, {3, 3, 2, 3}, std::vector<double>(54, 0.0), 0);
  const fg::tensor<float> y0 = fg::conv2d(fg::tensor<float>(fg::shape{1, 4, 4, 0}, std::vector<float>{}),
                                          fg::tensor<float>(fg::shape{3, 3, 0, 2}, std::vector<float>{}), 1, "SAME");
  check_close(y0, {1, 4, 4, 2}, std::vector<double>(32, 0.0), 0);
}

TEST_CASE("conv2d takes variables and expressions, and a tape watching variables differentiates it", "[conv]") {
  fg::variable<double> w(pattern({1, 1, 2, 1}, 5, 19, 10));
  const dtensor x = pattern({1, 2, 2, 2}, 7, 29, 8);
  fg::gradient_tape tape;
  const dtensor y = fg::reduce_sum(fg::conv2d(x * 2.0, w, 1, "VALID"));
  // d/dw sum(conv(2x, w)) = 2 * sum of x over the pixels, per input channel
  const dtensor g = tape.gradient(y, w);
  const double s0 = 2 * (x.data()[0] + x.data()[2] + x.data()[4] + x.data()[6]);
  const double s1 = 2 * (x.data()[1] + x.data()[3] + x.data()[5] + x.data()[7]);
  check_close(g, {1, 1, 2, 1}, {s0, s1}, 1e-12);
}

TEST_CASE("threads share the cached oneDNN primitives and get the results of a serial run", "[conv][threads]") {
  std::mt19937_64 rng(11);
  const fg::tensor<float> x = fg::cast<float>(uniform_tensor({4, 12, 12, 8}, rng)),
                          w = fg::cast<float>(uniform_tensor({3, 3, 8, 16}, rng));
  const fg::tensor<float> want = fg::conv2d(x, w, 1, "SAME");
  const fg::tensor<float> dwant = fg::conv2d_backprop_filter(x, w.shape(), want, 1, "SAME");
  std::vector<int> ok(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      bool same = true;
      for (int i = 0; i < 20; ++i) {
        const fg::tensor<float> y = fg::conv2d(x, w, 1, "SAME");
        const fg::tensor<float> dw = fg::conv2d_backprop_filter(x, w.shape(), y, 1, "SAME");
        for (std::size_t k = 0; k < y.size(); ++k) same = same && std::abs(y.data()[k] - want.data()[k]) <= 1e-4f;
        for (std::size_t k = 0; k < dw.size(); ++k)
          same = same && std::abs(dw.data()[k] - dwant.data()[k]) <= 1e-4f * std::max(1.f, std::abs(dwant.data()[k]));
      }
      ok[t] = same;
    });
  for (auto& th : threads) th.join();
  CHECK(ok == std::vector<int>(4, 1));
}
