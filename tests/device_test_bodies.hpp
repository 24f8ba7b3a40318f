// The device backend's test bodies, shared by tests/device_test.cpp (Thrust on OpenMP: "/gpu:0"
// is host memory, so every commit runs the whole device path) and cuda/device_test_part*.cu (a real
// GPU). Most bodies run once on the host and once on /gpu:0, each inside a device_scope, and
// compare: same values, results on the scope's device. Values that are checked against numpy or
// hand-computed literals are checked on both runs.
// Note [device test parts]: the bodies come in three parts. A program that includes this file
// runs them all; defining FG_DEVICE_TEST_PART as 1, 2 or 3 first keeps one, so that nvcc, which
// takes minutes per part, compiles cuda/device_test_part{1,2,3}.cu in parallel into one program.
#pragma once

#include <catch2/catch.hpp>
#include <fusegrad/eager/training.hpp>
#include <fusegrad/fusegrad.hpp>
#include <fusegrad/nn.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "higher_order_cases.hpp"
#include "op_list.hpp"

namespace fg_device_test {

using Catch::Matchers::Contains;

/// A result of a test body, read back to the host.
struct snapshot {
  fg::device device;
  fg::shape shape;
  std::vector<double> values;
};
using snapshots = std::vector<snapshot>;

/// Where t lives and its values as doubles.
template <class T>
snapshot snap(const fg::tensor<T>& t) {
  REQUIRE(t.defined());
  const fg::tensor<T> h = t.cpu();
  std::vector<double> v;
  for (std::size_t i = 0; i < h.size(); ++i) v.push_back(static_cast<double>(h.data()[i]));
  return {t.device(), t.shape(), v};
}

/// The elements of t, read back to the host.
template <class T>
std::vector<T> values(const fg::tensor<T>& t) {
  const fg::tensor<T> h = t.cpu();
  return std::vector<T>(h.data(), h.data() + h.size());
}

inline bool close(double a, double b, double tol) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::fabs(a - b) <= tol * (1 + std::fabs(a) + std::fabs(b));
}

/// Checks a snapshot against reference values (numpy's or hand-computed).
inline void expect_values(const snapshot& s, const std::vector<double>& want, double tol = 1e-12) {
  REQUIRE(s.values.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i << ": got " << s.values[i] << ", want " << want[i]);
    CHECK(close(s.values[i], want[i], tol));
  }
}

/// Runs body (which returns snapshots) inside a device_scope for the host and for /gpu:0, and
/// checks each result lives on its run's device with the same shape and values on both.
template <class Body>
std::pair<snapshots, snapshots> same_on_host_and_device(Body body, double tol = 1e-12) {
  snapshots h, d;
  {
    fg::device_scope scope("/cpu:0");
    h = body();
  }
  {
    fg::device_scope scope("/gpu:0");
    d = body();
  }
  REQUIRE(h.size() == d.size());
  for (std::size_t r = 0; r < h.size(); ++r) {
    INFO("result " << r);
    CHECK(h[r].device == fg::device::cpu());
    CHECK(d[r].device == fg::device::gpu(0));
    REQUIRE(h[r].shape == d[r].shape);
    for (std::size_t i = 0; i < h[r].values.size(); ++i) {
      INFO("element " << i << ": host " << h[r].values[i] << ", device " << d[r].values[i]);
      CHECK(close(h[r].values[i], d[r].values[i], tol));
    }
  }
  return {h, d};
}

/// Seeded uniform values in [lo, hi) as a host tensor of shape s.
inline fg::tensor<double> uniform(const fg::shape& s, std::mt19937_64& rng, double lo, double hi) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(s.elements());
  for (double& e : v) e = u(rng);
  return fg::tensor<double>(s, v);
}

// Part 1 of the bodies (Note [device test parts]).
#if !defined(FG_DEVICE_TEST_PART) || FG_DEVICE_TEST_PART == 1
TEST_CASE("every op of the op list gives the host's values and gradients on the device", "[device][ops]") {
  const std::uint64_t seed = 20240611;
  INFO("seed " << seed);
  for (const auto& op : fg_test::differentiable_ops()) {
    INFO("op " << op.name);
    std::mt19937_64 rng(seed);
    fg_test::inputs host_inputs;
    for (const auto& s : op.shapes) host_inputs.push_back(uniform(s, rng, op.lo, op.hi));
    std::mt19937_64 weight_rng(seed + 1);
    same_on_host_and_device([&] {
      fg_test::inputs x;
      for (const auto& t : host_inputs) x.push_back(t.to(fg::default_device()));
      fg::gradient_tape tape;
      for (const auto& t : x) tape.watch(t);
      const fg::tensor<double> y = op.f(x);
      // A weighted sum, so the upstream gradient differs between elements.
      std::mt19937_64 wr = weight_rng;
      const fg::tensor<double> w = uniform(y.shape(), wr, 0.5, 1.5).to(fg::default_device());
      const auto g = tape.gradient(fg::reduce_sum(y * w), x);
      snapshots out{snap(y)};
      for (const auto& gi : g) out.push_back(snap(gi));
      return out;
    });
  }
}

#endif

// Part 2 of the bodies (Note [device test parts]).
#if !defined(FG_DEVICE_TEST_PART) || FG_DEVICE_TEST_PART == 2
TEST_CASE("a fused chain is one pass on the device, forward, reduced and backward", "[device][fusion]") {
  fg::device_scope scope("/gpu:0");
  const fg::tensor<double> x = fg::linspace<double>(-3.0, 3.0, 10001);
  REQUIRE(x.device() == fg::device::gpu(0));
  const auto& passes = fg::core::counters().passes;
  auto start = passes;
  const fg::tensor<double> y = fg::log(1 + fg::exp(x)) * fg::sigmoid(x) + x * x;
  CHECK(passes - start == 1);
  start = passes;
  const fg::tensor<double> s = fg::reduce_sum(fg::log(1 + fg::exp(x)) * fg::sigmoid(x) + x * x);
  CHECK(passes - start == 1);
  fg::gradient_tape tape;
  tape.watch(x);
  const fg::tensor<double> loss = fg::reduce_sum(fg::log(1 + fg::exp(x)) * fg::sigmoid(x) + x * x);
  start = passes;
  const fg::tensor<double> dx = tape.gradient(loss, x);
  CHECK(passes - start == 1);
  CHECK(y.device() == fg::device::gpu(0));
  CHECK(dx.device() == fg::device::gpu(0));
  // The formulas written out by hand at element 7500 (x = 1.5).
  const double v = 1.5, sig = 1 / (1 + std::exp(-v));
  CHECK(close(values(y)[7500], std::log1p(std::exp(v)) * sig + v * v, 1e-14));
  CHECK(close(values(dx)[7500], sig * sig + std::log1p(std::exp(v)) * sig * (1 - sig) + 2 * v, 1e-14));
  CHECK(close(values(s)[0], values(loss)[0], 1e-14));
}

TEST_CASE("broadcast chains take the strided path on the device and match numpy", "[device][broadcast]") {
  same_on_host_and_device([] {
    const fg::tensor<double> a = {{1., 2., 3.}, {4., 5., 6.}};  // shape (2, 3)
    const fg::tensor<double> col = {{10.}, {20.}};               // shape (2, 1)
    const fg::tensor<double> row = {0.5, 0.25, 2.};              // shape (3,)
    const fg::tensor<double> r = a * row + col - 1;
    // (a * row + col - 1) with numpy broadcasting
    expect_values(snap(r), {9.5, 9.5, 15., 21., 20.25, 31.});
    const fg::tensor<bool> gt = a > col / 4;
    expect_values(snap(gt), {0, 0, 1, 0, 0, 1});
    const fg::tensor<std::int32_t> i = fg::cast<std::int32_t>(a) % 4 - fg::tensor<std::int32_t>{1, 2, 3};
    expect_values(snap(i), {0, 0, 0, -1, -1, -1});
    return snapshots{snap(r), snap(gt), snap(i)};
  });
}

TEST_CASE("reductions over all, one and several axes match numpy on the device", "[device][reduce]") {
  // x = ((np.arange(24) * 7 % 11) - 5) * 0.5, reshaped to (2, 3, 4)
  const std::vector<double> xv = {-2.5, 1.0,  -1.0, 2.5, 0.5, -1.5, 2.0,  0.0,  -2.0, 1.5, -0.5, -2.5,
                                  1.0,  -1.0, 2.5,  0.5, -1.5, 2.0, 0.0, -2.0, 1.5,  -0.5, -2.5, 1.0};
  same_on_host_and_device([&] {
    const fg::tensor<double> x = fg::tensor<double>(fg::shape{2, 3, 4}, xv).to(fg::default_device());
    snapshots out;
    out.push_back(snap(fg::reduce_sum(x)));
    expect_values(out.back(), {-1.5});  // x.sum()
    out.push_back(snap(fg::reduce_sum(x, 1)));
    expect_values(out.back(), {-4.0, 1.0, 0.5, 0.0, 1.0, 0.5, 0.0, -0.5});  // x.sum(axis=1)
    out.push_back(snap(fg::reduce_max(x, {0, 2})));
    expect_values(out.back(), {2.5, 2.0, 1.5});  // x.max(axis=(0, 2))
    out.push_back(snap(fg::reduce_min(x, 2, true)));
    CHECK(out.back().shape == fg::shape{2, 3, 1});
    expect_values(out.back(), {-2.5, -1.5, -2.5, -1.0, -2.0, -2.5});  // x.min(axis=2, keepdims=True)
    out.push_back(snap(fg::reduce_prod(x, 0)));
    // x.prod(axis=0)
    expect_values(out.back(), {-2.5, -1.0, -2.5, 1.25, -0.75, -3.0, 0.0, -0.0, -3.0, -0.75, 1.25, -2.5});
    out.push_back(snap(fg::reduce_mean(x * 1, -1)));
    expect_values(out.back(), {0.0, 0.25, -0.875, 0.75, -0.375, -0.125});  // x.mean(axis=-1)
    out.push_back(snap(fg::reduce_all(x > -2, 1)));
    expect_values(out.back(), {0, 1, 1, 0, 1, 1, 0, 0});  // (x > -2).all(axis=1)
    out.push_back(snap(fg::reduce_any(x > 2, 1)));
    expect_values(out.back(), {0, 0, 0, 1, 0, 0, 1, 0});  // (x > 2).any(axis=1)
    const fg::tensor<std::int32_t> i = fg::reshape(fg::range<std::int32_t>(24), {2, 3, 4});
    out.push_back(snap(fg::reduce_sum(i, 0)));
    expect_values(out.back(), {12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34});  // i.sum(axis=0)
    out.push_back(snap(fg::reduce_max(i, 2)));
    expect_values(out.back(), {3, 7, 11, 15, 19, 23});  // i.max(axis=2)
    out.push_back(snap(fg::reduce_mean(i, 2)));
    expect_values(out.back(), {1, 5, 9, 13, 17, 21});  // i.sum(axis=2) // 4
    out.push_back(snap(fg::reduce_mean(x)));
    expect_values(out.back(), {-0.0625});  // x.mean()
    return out;
  });
}

TEST_CASE("each layout of a device reduction gives numpy's answer", "[device][reduce]") {
  same_on_host_and_device([] {
    snapshots out;
    const fg::tensor<double> k = fg::cast<double>(fg::range<std::int32_t>(15000) % 7);
    // Few outputs of many elements, the reduced axis innermost (many threads per output):
    // (arange(15000) % 7).reshape(3, 5000).sum(axis=1)
    out.push_back(snap(fg::reduce_sum(fg::reshape(k, {3, 5000}), 1)));
    expect_values(out.back(), {14995.0, 14999.0, 15003.0});
    // The kept axis innermost: (arange(600) % 5).reshape(200, 3).sum(axis=0)
    const fg::tensor<double> w = fg::reshape(fg::cast<double>(fg::range<std::int32_t>(600) % 5), {200, 3});
    out.push_back(snap(fg::reduce_sum(w, 0)));
    expect_values(out.back(), {400.0, 400.0, 400.0});
    // ((arange(600) % 5) * (arange(600) % 7)).reshape(200, 3).max(axis=0)
    const fg::tensor<double> m = fg::reshape(fg::cast<double>(fg::range<std::int32_t>(600) % 7), {200, 3});
    out.push_back(snap(fg::reduce_max(w * m, 0)));
    expect_values(out.back(), {24.0, 24.0, 24.0});
    // Many outputs of few elements each (one thread per output): every row of (70000, 2) sums to 2 * 3.
    out.push_back(snap(fg::reduce_sum(fg::fill<double>(fg::shape{70000, 2}, 3.0), 1)));
    CHECK(out.back().values == std::vector<double>(70000, 6.0));
    // A full reduction of a broadcast chain: sum of (arange(4)[:, None] + arange(1000))
    // = 1000 * (0 + 1 + 2 + 3) + 4 * (999 * 1000 / 2)
    const fg::tensor<double> c = fg::reshape(fg::cast<double>(fg::range<std::int32_t>(4)), {4, 1});
    out.push_back(snap(fg::reduce_sum(c + fg::cast<double>(fg::range<std::int32_t>(1000)))));
    expect_values(out.back(), {2004000.0});
    // A full reduction of a flat chain (the flat path of the chunked fold, then thrust::reduce): sum of 2 * (arange(15000) % 7)
    out.push_back(snap(fg::reduce_sum(k * 2)));
    expect_values(out.back(), {2 * (14995.0 + 14999.0 + 15003.0)});
    return out;
  });
}

TEST_CASE("device max and min propagate NaN and empty sums are zero", "[device][reduce]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  same_on_host_and_device([&] {
    const fg::tensor<double> x = {1., nan, 3.};
    const snapshots out{snap(fg::reduce_max(x)), snap(fg::reduce_min(x)),
                        snap(fg::reduce_sum(fg::zeros<double>(fg::shape{0, 3}), 0))};
    CHECK(std::isnan(out[0].values[0]));
    CHECK(std::isnan(out[1].values[0]));
    expect_values(out[2], {0., 0., 0.});
    return out;
  });
}

#endif

// Part 3 of the bodies (Note [device test parts]).
#if !defined(FG_DEVICE_TEST_PART) || FG_DEVICE_TEST_PART == 3
TEST_CASE("matmul on the device matches numpy for floats, integers, transposes and batches", "[device][matmul]") {
  same_on_host_and_device([] {
    const fg::tensor<double> a = fg::reshape(fg::cast<double>(fg::range<std::int32_t>(6)), {2, 3});
    const fg::tensor<double> b = fg::reshape(fg::cast<double>(fg::range<std::int32_t>(12)), {3, 4});
    const fg::tensor<double> bb = fg::reshape(fg::cast<double>(fg::range<std::int32_t>(12)), {2, 2, 3});
    snapshots out;
    out.push_back(snap(fg::matmul(a, b)));
    expect_values(out.back(), {20, 23, 26, 29, 56, 68, 80, 92});  // a @ b
    out.push_back(snap(fg::matmul(a, a, false, true)));
    expect_values(out.back(), {5, 14, 14, 50});  // a @ a.T
    out.push_back(snap(fg::matmul(a, a, true, false)));
    expect_values(out.back(), {9, 12, 15, 12, 17, 22, 15, 22, 29});  // a.T @ a
    out.push_back(snap(fg::matmul(bb, b)));
    // bb @ b (one matrix for every batch element)
    expect_values(out.back(), {20, 23, 26, 29, 56, 68, 80, 92, 92, 113, 134, 155, 128, 158, 188, 218});
    out.push_back(snap(fg::matmul(bb, bb, false, true)));
    expect_values(out.back(), {5, 14, 14, 50, 149, 212, 212, 302});  // bb @ bb.transpose(0, 2, 1)
    out.push_back(snap(fg::matmul(a, fg::tensor<double>{1., 2., 3.})));
    expect_values(out.back(), {8, 26});  // a @ [1, 2, 3]
    out.push_back(snap(fg::matmul(fg::cast<std::int32_t>(a), fg::cast<std::int32_t>(b))));
    expect_values(out.back(), {20, 23, 26, 29, 56, 68, 80, 92});
    out.push_back(snap(fg::matmul(fg::cast<float>(a), fg::cast<float>(b), false, false)));
    expect_values(out.back(), {20, 23, 26, 29, 56, 68, 80, 92});
    out.push_back(snap(fg::matmul(fg::cast<std::int64_t>(a), fg::cast<std::int64_t>(a), true, false)));
    expect_values(out.back(), {9, 12, 15, 12, 17, 22, 15, 22, 29});
    out.push_back(snap(fg::matmul(fg::zeros<double>(fg::shape{2, 0}), fg::zeros<double>(fg::shape{0, 3}))));
    expect_values(out.back(), {0, 0, 0, 0, 0, 0});
    return out;
  });
}

TEST_CASE("matmul gradients on the device equal the host's", "[device][matmul][gradient]") {
  std::mt19937_64 rng(7);
  INFO("seed 7");
  const fg::tensor<double> ah = uniform({3, 2, 4}, rng, -1, 1), bh = uniform({4, 5}, rng, -1, 1);
  same_on_host_and_device([&] {
    const fg::tensor<double> a = ah.to(fg::default_device()), b = bh.to(fg::default_device());
    fg::gradient_tape tape;
    tape.watch(a);
    tape.watch(b);
    const fg::tensor<double> y = fg::matmul(fg::tanh(a), b * 2);
    const auto g = tape.gradient(fg::reduce_sum(fg::sin(y)), std::vector<fg::tensor<double>>{a, b});
    return snapshots{snap(y), snap(g[0]), snap(g[1])};
  });
}

TEST_CASE("third derivatives through a broadcast on the device equal the host's", "[device][gradient][higher_order]") {
  // fg_test::third_order_through_broadcast, whose recorded backward step reshapes its upstream
  // gradient (the replay's reshape), here of device tensors.
  const auto [h, d] = same_on_host_and_device([&] {
    const auto [gb, ga, gaa] = fg_test::third_order_through_broadcast();
    return snapshots{snap(gb), snap(ga), snap(gaa)};
  });
  expect_values(d[0], {5.0, 5.0, 5.0});
  expect_values(d[1], {60.0, 120.0});
  expect_values(d[2], {12.0 * (2 * 1.0 * 3.0 + 5.0), 12.0 * (2 * 2.0 * 3.0 + 5.0)});
}

TEST_CASE("shape ops, indexing, gather, scans and argmax work on device tensors", "[device][shape]") {
  std::mt19937_64 rng(11);
  INFO("seed 11");
  const fg::tensor<double> xh = uniform({2, 3, 4}, rng, 0.5, 2);
  same_on_host_and_device([&] {
    const fg::tensor<double> x = xh.to(fg::default_device());
    const fg::tensor<std::int32_t> idx = {2, 0, 2};
    fg::gradient_tape tape({.persistent = true});
    tape.watch(x);
    std::vector<fg::tensor<double>> ys = {
        fg::transpose(x, {2, 0, 1}),
        fg::broadcast_to(fg::reduce_sum(x, 1, true), {2, 3, 4}),
        fg::concat({x, fg::tensor<double>(x * 2)}, 1),
        fg::stack({x, fg::tensor<double>(-x)}, 0),
        fg::tile(x, {1, 2, 1}),
        fg::squeeze(fg::expand_dims(x, 0)),
        x(1, fg::slice(0, 3, 2)),
        fg::gather(x, idx, 1),
        fg::cumsum(x, 2, false, true),
        fg::cumprod(x, 1, true),
        fg::reshape(x, {4, -1}),
    };
    snapshots out;
    for (const auto& y : ys) {
      out.push_back(snap(y));
      out.push_back(snap(tape.gradient(fg::reduce_sum(y * y), x)));
    }
    out.push_back(snap(fg::argmax(x, 2)));
    out.push_back(snap(fg::argmin(x, 0)));
    out.push_back(snap(fg::one_hot<float>(idx, 3)));
    // tf.one_hot([2, 0, 2], 3)
    expect_values(out.back(), {0, 0, 1, 1, 0, 0, 0, 0, 1});
    return out;
  });
}

TEST_CASE("variables and their gradients live on the device", "[device][variable]") {
  same_on_host_and_device([] {
    fg::variable<double> v(fg::tensor<double>{1., 2., 3.});
    v.assign_add(fg::tensor<double>{0.5, 0.5, 0.5});
    fg::gradient_tape tape;
    const fg::tensor<double> loss = fg::reduce_sum(v * v * 3);
    const fg::tensor<double> g = tape.gradient(loss, v);
    expect_values(snap(v.value()), {1.5, 2.5, 3.5});
    expect_values(snap(g), {9., 15., 21.});  // d/dv 3 v^2 = 6 v
    return snapshots{snap(v.value()), snap(loss), snap(g)};
  });
}

/// One training op with its hyperparameters (each branch of its rule: Nesterov, weight decay,
/// momentum), as a step over a variable, its slots (all zeros at first, as an optimizer makes
/// them) and a gradient; `t` counts the steps from 1.
template <class T>
struct training_case {
  const char* name;
  std::size_t slots;
  std::function<void(fg::variable<T>, std::vector<fg::variable<T>>&, const fg::tensor<T>&, std::int64_t t)> step;
};

template <class T>
std::vector<training_case<T>> training_cases() {
  using V = std::vector<fg::variable<T>>;
  using G = fg::tensor<T>;
  return {
      {"apply_gradient_descent", 0, [](fg::variable<T> w, V&, const G& g, std::int64_t) {
         fg::apply_gradient_descent(w, 0.1, g);
       }},
      {"apply_keras_momentum", 1, [](fg::variable<T> w, V& s, const G& g, std::int64_t) {
         fg::apply_keras_momentum(w, s[0], g, {.learning_rate = 0.05, .momentum = 0.9});
       }},
      {"apply_keras_momentum, nesterov", 1, [](fg::variable<T> w, V& s, const G& g, std::int64_t) {
         fg::apply_keras_momentum(w, s[0], g, {.learning_rate = 0.05, .momentum = 0.9, .nesterov = true});
       }},
      {"apply_adam", 2, [](fg::variable<T> w, V& s, const G& g, std::int64_t t) {
         fg::apply_adam(w, s[0], s[1], g, {.learning_rate = 0.01, .step = t});
       }},
      {"apply_adam, weight decay", 2, [](fg::variable<T> w, V& s, const G& g, std::int64_t t) {
         fg::apply_adam(w, s[0], s[1], g, {.learning_rate = 0.01, .weight_decay = 0.004, .step = t});
       }},
      {"apply_adam_with_amsgrad", 3, [](fg::variable<T> w, V& s, const G& g, std::int64_t t) {
         fg::apply_adam_with_amsgrad(w, s[0], s[1], s[2], g, {.learning_rate = 0.01, .step = t});
       }},
      {"apply_rms_prop", 1, [](fg::variable<T> w, V& s, const G& g, std::int64_t) {
         fg::apply_rms_prop(w, s[0], g, {.learning_rate = 0.01});
       }},
      {"apply_rms_prop, momentum", 2, [](fg::variable<T> w, V& s, const G& g, std::int64_t) {
         fg::apply_rms_prop(w, s[0], s[1], g, {.learning_rate = 0.01, .momentum = 0.9});
       }},
      {"apply_centered_rms_prop", 3, [](fg::variable<T> w, V& s, const G& g, std::int64_t) {
         fg::apply_centered_rms_prop(w, s[0], s[1], s[2], g, {.learning_rate = 0.01});
       }},
      {"apply_centered_rms_prop, momentum", 3, [](fg::variable<T> w, V& s, const G& g, std::int64_t) {
         fg::apply_centered_rms_prop(w, s[0], s[1], s[2], g, {.learning_rate = 0.01, .momentum = 0.9});
       }},
      {"apply_adagrad_v2", 1, [](fg::variable<T> w, V& s, const G& g, std::int64_t) {
         fg::apply_adagrad_v2(w, s[0], g, {.learning_rate = 0.1});
       }},
  };
}

/// Checks that device values d equal host values h: bit for bit on a host Thrust system, where
/// the same compiler builds the host loop and the device functor from the same rule, each
/// operation rounded once either way; on a GPU to a few units of T's epsilon, because nvcc
/// fuses a multiply and an add into one FMA (one rounding where the host has two).
template <class T>
void expect_same_as_host(const std::vector<T>& d, const std::vector<T>& h) {
  REQUIRE(d.size() == h.size());
  for (std::size_t i = 0; i < h.size(); ++i) {
    INFO("element " << i << ": device " << d[i] << ", host " << h[i]);
    if constexpr (fusegrad::device_eval::native_gpu)
      CHECK(close(d[i], h[i], 32 * static_cast<double>(std::numeric_limits<T>::epsilon())));
    else
      CHECK(std::bit_cast<std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>(d[i]) ==
            std::bit_cast<std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>(h[i]));
  }
}

/// Several steps of every training op on /gpu:0 and on the host, side by side from the same
/// values and gradients.
template <class T>
void training_ops_on_the_device() {
  const fg::shape shape{5, 7};  // 35 elements: SIMD batches and a scalar tail on the host
  const int steps = 5;
  std::mt19937_64 rng(29);
  INFO("seed 29");
  const fg::tensor<T> w0 = fg::cast<T>(uniform(shape, rng, -1, 1));
  std::vector<fg::tensor<T>> grads;
  for (int t = 0; t < steps; ++t) grads.push_back(fg::cast<T>(uniform(shape, rng, -1, 1)));
  for (const training_case<T>& c : training_cases<T>()) {
    INFO(c.name);
    fg::variable<T> wh(w0, "w"), wd(w0.gpu(), "w");
    std::vector<fg::variable<T>> sh, sd;
    for (std::size_t k = 0; k < c.slots; ++k) {
      sh.emplace_back(fg::zeros<T>(shape), "slot");
      sd.emplace_back(fg::zeros<T>(shape).gpu(), "slot");
    }
    for (int t = 0; t < steps; ++t) {
      INFO("step " << t + 1);
      const fg::tensor<T> gd = grads[t].gpu();
      // Readers of the device values before the step, and what they read.
      const fg::tensor<T> w_reader = wd.value();
      const std::vector<T> w_read = values(w_reader);
      std::vector<fg::tensor<T>> s_readers;
      std::vector<std::vector<T>> s_read;
      for (auto& s : sd) {
        s_readers.push_back(s.value());
        s_read.push_back(values(s_readers.back()));
      }
      c.step(wh, sh, grads[t], t + 1);
      const auto allocations = fg::core::counters().allocations;
      c.step(wd, sd, gd, t + 1);
      // One new buffer per variable on the device and nothing else: no copies through the host.
      CHECK(fg::core::counters().allocations - allocations == static_cast<std::int64_t>(1 + c.slots));
      CHECK(wd.peek().device() == fg::device::gpu(0));
      CHECK(w_reader.device() == fg::device::gpu(0));
      CHECK(values(w_reader) == w_read);
      CHECK(values(wd.peek()) != w_read);
      expect_same_as_host(values(wd.peek()), values(wh.peek()));
      for (std::size_t k = 0; k < c.slots; ++k) {
        INFO("slot " << k);
        CHECK(sd[k].peek().device() == fg::device::gpu(0));
        CHECK(values(s_readers[k]) == s_read[k]);
        expect_same_as_host(values(sd[k].peek()), values(sh[k].peek()));
      }
      if (t == 0 && c.slots == 0) {  // w0 - 0.1 g, by hand
        const std::vector<T> w = values(wd.peek()), g = values(grads[0]), x = values(w0);
        for (std::size_t i = 0; i < w.size(); ++i) CHECK(close(w[i], x[i] - T(0.1) * g[i], 1e-6));
      }
    }
  }
}

TEST_CASE("every training op steps a device variable in one kernel, as the host does", "[device][training]") {
  training_ops_on_the_device<float>();
  training_ops_on_the_device<double>();
  // A gradient on another device: an error naming both, and nothing changed.
  fg::variable<float> w(fg::tensor<float>{1.f, 2.f}.gpu(), "w"), m(fg::zeros<float>(fg::shape{2}).gpu(), "m");
  try {
    fg::apply_keras_momentum(w, m, fg::tensor<float>{1.f, 1.f}, {.momentum = 0.9});
    FAIL("no device_error");
  } catch (const fg::device_error& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("apply_keras_momentum") != std::string::npos);
    CHECK(msg.find("/cpu:0") != std::string::npos);
    CHECK(msg.find("/gpu:0") != std::string::npos);
  }
  CHECK(values(w.peek()) == std::vector<float>{1.f, 2.f});
  CHECK(values(m.peek()) == std::vector<float>{0.f, 0.f});
}

TEST_CASE("custom gradients run on the device", "[device][custom_gradient]") {
  // log(1 + e^x) with the gradient 1 - 1 / (1 + e^x), finite where e^x overflows.
  auto log1pexp = fg::custom_gradient([](const fg::tensor<float>& x) {
    fg::tensor<float> e = fg::exp(x);
    auto grad = [e](const fg::tensor<float>& dy) -> fg::tensor<float> { return dy * (1 - 1 / (1 + e)); };
    return std::make_pair(fg::tensor<float>(fg::log(1 + e)), grad);
  });
  same_on_host_and_device([&] {
    const fg::tensor<float> x = {0.f, 100.f};
    fg::gradient_tape tape;
    tape.watch(x);
    const fg::tensor<float> y = log1pexp(x);
    const fg::tensor<float> g = tape.gradient(y, x);
    expect_values(snap(g), {0.5, 1.0});
    return snapshots{snap(y), snap(g)};
  });
}

TEST_CASE("device_scope places new tensors and op results on its device, like tf.device", "[device][placement]") {
  CHECK(fg::default_device() == fg::device::cpu());
  {
    fg::device_scope gpu("/gpu:0");
    CHECK(fg::default_device() == fg::device::gpu(0));
    CHECK(fg::zeros<float>(fg::shape{2}).device() == fg::device::gpu(0));
    CHECK(fg::ones<double>(fg::shape{2}).device() == fg::device::gpu(0));
    CHECK(fg::fill<std::int64_t>(fg::shape{2}, 5).device() == fg::device::gpu(0));
    CHECK(fg::range<std::int32_t>(4).device() == fg::device::gpu(0));
    CHECK(fg::linspace<float>(0.f, 1.f, 3).device() == fg::device::gpu(0));
    CHECK(fg::random::normal<float>(fg::shape{3}, 5).device() == fg::device::gpu(0));
    const fg::tensor<float> s = 2.5f;
    CHECK(s.device() == fg::device::gpu(0));
    const fg::tensor<bool> b = {true, false};
    CHECK(b.device() == fg::device::gpu(0));
    CHECK(values(fg::fill<std::int64_t>(fg::shape{2}, 5)) == std::vector<std::int64_t>{5, 5});
    CHECK(values(fg::range<std::int32_t>(4)) == std::vector<std::int32_t>{0, 1, 2, 3});
    CHECK(values(fg::linspace<float>(0.f, 1.f, 3)) == std::vector<float>{0.f, 0.5f, 1.f});
    CHECK(values(s) == std::vector<float>{2.5f});
    {
      fg::device_scope cpu(fg::device::cpu());
      CHECK(fg::zeros<float>(fg::shape{2}).device() == fg::device::cpu());
    }
    CHECK(fg::default_device() == fg::device::gpu(0));
  }
  CHECK(fg::default_device() == fg::device::cpu());
  // The same seed draws the same values on either device.
  const fg::tensor<float> host_draw = fg::random::uniform<float>(fg::shape{5}, 42);
  fg::device_scope gpu(fg::device::gpu(0));
  CHECK(values(fg::random::uniform<float>(fg::shape{5}, 42)) == values(host_draw));
}

TEST_CASE("copies between host and device keep values and types", "[device][placement]") {
  const fg::tensor<std::int64_t> i = {{1, -2}, {3, 4}};
  const fg::tensor<bool> b = {true, false, true};
  const fg::tensor<double> d = {0.25, -1e300};
  const auto ig = i.gpu();
  CHECK(ig.device() == fg::device::gpu(0));
  CHECK(ig.shape() == fg::shape{2, 2});
  CHECK(ig.cpu().device() == fg::device::cpu());
  CHECK(values(ig) == std::vector<std::int64_t>{1, -2, 3, 4});
  CHECK(values(b.gpu()) == std::vector<bool>{true, false, true});
  CHECK(values(d.to(fg::device::parse("/gpu:0"))) == std::vector<double>{0.25, -1e300});
  CHECK(ig.gpu(0).data() == ig.data());  // already there: no copy
  CHECK_THROWS_AS(ig.item(), fg::device_error);
  CHECK_THROWS_WITH(ig.numpy(), Contains(".cpu()"));
}

TEST_CASE("a device tensor prints its device", "[device][printing]") {
  std::ostringstream os;
  os << fg::tensor<float>{1.f, 2.f}.gpu();
  CHECK(os.str() == "tensor([1. 2.], shape=(2,), dtype=float32, device=/gpu:0)");
}

TEST_CASE("operands on different devices raise device_error naming both", "[device][errors]") {
  const fg::tensor<float> h = {1.f, 2.f};
  const fg::tensor<float> g = h.gpu();
  auto names_both = [](auto&& f) {
    try {
      f();
      FAIL("no device_error");
    } catch (const fg::device_error& e) {
      const std::string m = e.what();
      INFO(m);
      CHECK(m.find("/cpu:0") != std::string::npos);
      CHECK(m.find("/gpu:0") != std::string::npos);
    }
  };
  names_both([&] { fg::tensor<float> r = h + g; });
  names_both([&] { fg::tensor<float> r = fg::exp(g) * fg::sin(h); });
  names_both([&] { fg::reduce_sum(g * h); });
  names_both([&] { fg::matmul(fg::reshape(h, {1, 2}), fg::reshape(g, {2, 1})); });
  names_both([&] { fg::concat({h, g}); });
  names_both([&] { fg::gather(g, fg::tensor<std::int32_t>{0}); });
}

TEST_CASE("a device that does not exist raises device_error naming it", "[device][errors]") {
  const fg::tensor<float> h = {1.f, 2.f};
  CHECK_THROWS_AS(h.gpu(7), fg::device_error);
  CHECK_THROWS_WITH(h.gpu(7), Contains("/gpu:7"));
  fg::device_scope scope("/gpu:7");
  CHECK_THROWS_WITH(fg::zeros<float>(fg::shape{3}), Contains("/gpu:7"));
  CHECK_THROWS_AS(fg::tensor<float>(1.f), fg::device_error);
}

TEST_CASE("out of device memory raises out_of_memory naming the size and leaves tensors intact", "[device][errors]") {
  fg::device_scope scope("/gpu:0");
  const fg::tensor<float> kept = {1.f, 2.f, 3.f};
  const fg::shape huge{std::size_t{1} << 30, std::size_t{1} << 30};  // 2^60 floats: 2^62 bytes
  CHECK_THROWS_AS(fg::zeros<float>(huge), std::bad_alloc);
  try {
    fg::ones<float>(huge);
    FAIL("no out_of_memory");
  } catch (const fg::out_of_memory& e) {
    const std::string m = e.what();
    INFO(m);
    CHECK(m.find("4611686018427387904 bytes") != std::string::npos);
    CHECK(m.find("/gpu:0") != std::string::npos);
  }
  CHECK(values(kept) == std::vector<float>{1.f, 2.f, 3.f});
  const fg::tensor<float> after = kept * 2;
  CHECK(values(after) == std::vector<float>{2.f, 4.f, 6.f});
}

TEST_CASE("jacobian and batch_jacobian answer on the target's device, whatever the default device", "[device][jacobian]") {
  // The seeds and the Jacobian are built on the host and the gradients read through host
  // copies (on a real GPU a device buffer is not host memory); the seeds and the result go to
  // the target's device.
  const auto jacobians = [](const fg::tensor<double>& x, const fg::tensor<double>& xb) {
    fg::gradient_tape tape({.persistent = true});
    tape.watch(x);
    tape.watch(xb);
    const fg::tensor<double> y = x * x;
    const fg::tensor<double> yb = xb * xb * xb;
    const fg::tensor<double> j = tape.jacobian(y, x), jb = tape.batch_jacobian(yb, xb);
    expect_values(snap(j), {2, 0, 0, 0, 4, 0, 0, 0, 6});    // diag(2 x)
    expect_values(snap(jb), {3, 0, 0, 12, 27, 0, 0, 48});  // per example diag(3 x^2)
    return snapshots{snap(j), snap(jb)};
  };
  const fg::tensor<double> xh = {1., 2., 3.};
  const fg::tensor<double> xbh = {{1., 2.}, {3., 4.}};
  same_on_host_and_device([&] { return jacobians(xh.to(fg::default_device()), xbh.to(fg::default_device())); });
  // Targets on the device under the host's default device, and on the host inside a device scope.
  for (const fg::device d : {fg::device::gpu(0), fg::device::cpu()}) {
    INFO("target on " << d.str());
    fg::device_scope scope(d.is_gpu() ? fg::device::cpu() : fg::device::gpu(0));
    for (const snapshot& s : jacobians(xh.to(d), xbh.to(d))) CHECK(s.device == d);
  }
}

TEST_CASE("fit, evaluate and predict under a device_scope train on its device from host data", "[device][fit]") {
  // Note [batches on the model's device]: the data stay on the host; fit copies each batch to the
  // scope's device, where the model's variables and Adam's slots are made. The runs start from
  // the same initial values (random tensors are made on the host), so their histories agree.
  namespace nn = fg::nn;
  std::mt19937_64 rng(31);
  INFO("seed 31");
  const fg::tensor<float> x = fg::cast<float>(uniform({24, 6, 6, 1}, rng, 0, 1));
  std::vector<std::int64_t> classes(24);
  for (std::size_t i = 0; i < classes.size(); ++i) classes[i] = static_cast<std::int64_t>((i * 7) % 3);
  const fg::tensor<float> y = fg::one_hot<float>(fg::tensor<std::int64_t>(fg::shape{24}, classes), 3);
  same_on_host_and_device(
      [&] {
        const fg::device here = fg::default_device();
        fg::random::set_seed(3);
        nn::sequential m{nn::conv2d(4, 3, {.padding = "same", .activation = "relu"}), nn::max_pool2d(2), nn::flatten(),
                         nn::dense(3, {.activation = "softmax"})};
        m.compile({.optimizer = fg::optimizers::adam({.learning_rate = 0.01}),
                   .loss = nn::losses::categorical_crossentropy(),
                   .metrics = {"accuracy"}});
        const nn::history h = m.fit(x, y, {.batch_size = 8, .epochs = 3, .verbose = 0,
                                           .validation_data = std::pair{x, y}});
        for (const fg::variable<float>& v : nn::trainable_variables(m)) CHECK(v.peek().device() == here);
        const nn::logs e = m.evaluate(x, y, {.batch_size = 8});
        CHECK(e.at("loss") == h["val_loss"].back());  // the same batches, the same model
        CHECK(h["loss"].back() < h["loss"].front());  // it learns
        const fg::tensor<float> p = m.predict(x, {.batch_size = 10});
        CHECK(p.device() == here);
        const fg::tensor<float> losses(fg::shape{3}, std::vector<float>(h["loss"].begin(), h["loss"].end()));
        return snapshots{snap(p), snap(losses.to(here))};
      },
      1e-4);
}
#endif
}  // namespace fg_device_test
