// Saved derivatives (Note [saved derivative] in eager/saved_derivative.hpp): a recorded host
// loss (a full sum) of one tensor with a transcendental op computes its derivative in the
// forward pass; the backward step is then a product, or nothing at all for an upstream of 1.
#include <catch2/catch.hpp>
#include <cmath>
#include <fusegrad/fusegrad.hpp>

namespace {
double softplus_sigmoid_grad(double v) {
  const double s = 1 / (1 + std::exp(-v));
  return s * s + std::log1p(std::exp(v)) * s * (1 - s) + 2 * v;
}
}  // namespace

TEST_CASE("a fused loss saves its derivative: one forward pass, no backward pass", "[tape][fusion][saved]") {
  fg::tensor<double> x = fg::linspace<double>(-3, 3, 101);
  fg::gradient_tape g;
  g.watch(x);
  auto& c = fg::core::counters();
  const auto p0 = c.passes;
  fg::tensor<double> loss = fg::sum(fg::log(1 + fg::exp(x)) * fg::sigmoid(x) + x * x);
  CHECK(c.passes - p0 == 1);
  const auto p1 = c.passes;
  fg::tensor<double> dx = g.gradient(loss, x);
  CHECK(c.passes - p1 == 0);
  double ref_loss = 0;
  for (std::size_t i = 0; i < 101; ++i) {
    const double v = x.data()[i];
    ref_loss += std::log1p(std::exp(v)) / (1 + std::exp(-v)) + v * v;
    CHECK(dx.data()[i] == Approx(softplus_sigmoid_grad(v)).epsilon(1e-12));
  }
  CHECK(loss.item() == Approx(ref_loss).epsilon(1e-12));
}

TEST_CASE("a saved derivative times an upstream gradient other than 1", "[tape][fusion][saved]") {
  fg::tensor<double> x = fg::linspace<double>(-2, 2, 33);
  fg::gradient_tape g;
  g.watch(x);
  fg::tensor<double> y = fg::sum(fg::tanh(x) * 3.0);
  fg::tensor<double> dx = g.gradient(y, x, fg::tensor<double>(2.5));
  for (std::size_t i = 0; i < 33; ++i) {
    const double t = std::tanh(x.data()[i]);
    CHECK(dx.data()[i] == Approx(2.5 * 3 * (1 - t * t)).epsilon(1e-13));
  }
}

TEST_CASE("an elementwise evaluation saves nothing; its backward step is one block pass", "[tape][fusion][saved]") {
  fg::tensor<double> x = fg::linspace<double>(-2, 2, 33);
  fg::gradient_tape g;
  g.watch(x);
  auto& c = fg::core::counters();
  const auto live = c.live_buffers;
  fg::tensor<double> y = fg::tanh(x) * 3.0;  // elementwise: the upstream is a tensor
  CHECK(c.live_buffers == live + 1);         // y only
  fg::tensor<double> w = fg::linspace<double>(1, 5, 33);
  const auto p0 = c.passes;
  fg::tensor<double> dx = g.gradient(y, x, w);
  CHECK(c.passes - p0 == 1);
  for (std::size_t i = 0; i < 33; ++i) {
    const double t = std::tanh(x.data()[i]);
    CHECK(dx.data()[i] == Approx(w.data()[i] * 3 * (1 - t * t)).epsilon(1e-13));
  }
}

TEST_CASE("a reduction under a tape sums in the same order as without one", "[tape][fusion][saved]") {
  fg::tensor<float> x = fg::random::uniform<float>({4099}, 7, -4.f, 4.f);
  const float plain = fg::sum(fg::exp(x) * fg::sin(x) + 2.5f).item();
  fg::gradient_tape g;
  g.watch(x);
  const float taped = fg::sum(fg::exp(x) * fg::sin(x) + 2.5f).item();
  CHECK(taped == plain);
  fg::tensor<float> y = fg::exp(x) * fg::sin(x) + 2.5f;
  fg::tensor<float> z = fg::exp(x) * fg::sin(x) + 2.5f;
  for (std::size_t i = 0; i < x.size(); ++i) REQUIRE(y.data()[i] == z.data()[i]);
}

TEST_CASE("the saved derivative agrees with the derivative rules run on the expression", "[tape][fusion][saved]") {
  // Literals at several places (pooled), a repeated costly subexpression, a leaf used bare.
  fg::tensor<float> x = fg::random::uniform<float>({1000}, 11, -3.f, 3.f);
  const auto f = [](const fg::tensor<float>& v) {
    return fg::sum(fg::log(2.f + fg::exp(v)) * fg::cos(v) - 0.5f * fg::exp(v) + fg::log(2.f + fg::exp(v)) / 3.f + v);
  };
  fg::gradient_tape saved;
  saved.watch(x);
  fg::tensor<float> y = f(x);
  fg::tensor<float> g_saved = saved.gradient(y, x);
  // A persistent tape answering inside its own scope records the backward step, so the step
  // runs the derivative rules on the expression's program, op by op.
  fg::gradient_tape rules({.persistent = true});
  rules.watch(x);
  fg::tensor<float> y2 = f(x);
  fg::tensor<float> g_rules = rules.gradient(y2, x);
  CHECK(y.item() == y2.item());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x.data()[i];
    const double e = std::exp(v), lp = std::log(2 + e);
    const double ref = e / (2 + e) * std::cos(v) - lp * std::sin(v) - 0.5 * e + e / (2 + e) / 3 + 1;
    REQUIRE(g_saved.data()[i] == Approx(ref).epsilon(2e-5).margin(2e-5));
    REQUIRE(g_saved.data()[i] == Approx(g_rules.data()[i]).epsilon(2e-6).margin(2e-6));
  }
}

TEST_CASE("second derivatives through a saved derivative use the rules", "[tape][fusion][saved][higher]") {
  fg::tensor<double> x = fg::linspace<double>(-2, 2, 9);
  SECTION("persistent tape differentiating its own gradient") {
    fg::gradient_tape g({.persistent = true});
    g.watch(x);
    fg::tensor<double> y = fg::sum(fg::softplus(x) * 2.0);
    fg::tensor<double> d1 = g.gradient(y, x);
    fg::tensor<double> d2 = g.gradient(fg::sum(d1), x);
    for (std::size_t i = 0; i < 9; ++i) {
      const double s = 1 / (1 + std::exp(-x.data()[i]));
      CHECK(d1.data()[i] == Approx(2 * s).epsilon(1e-13));
      CHECK(d2.data()[i] == Approx(2 * s * (1 - s)).epsilon(1e-12));
    }
  }
  SECTION("nested tapes") {
    fg::gradient_tape outer;
    outer.watch(x);
    fg::tensor<double> d1;
    {
      fg::gradient_tape inner;
      inner.watch(x);
      fg::tensor<double> y = fg::sum(fg::exp(x) * fg::sin(x));
      d1 = inner.gradient(y, x);
    }
    fg::tensor<double> d2 = outer.gradient(fg::sum(d1), x);
    for (std::size_t i = 0; i < 9; ++i) {
      const double v = x.data()[i];
      CHECK(d1.data()[i] == Approx(std::exp(v) * (std::sin(v) + std::cos(v))).epsilon(1e-13));
      CHECK(d2.data()[i] == Approx(2 * std::exp(v) * std::cos(v)).epsilon(1e-12));
    }
  }
}

TEST_CASE("expressions that do not qualify are differentiated by the rules", "[tape][fusion][saved]") {
  fg::tensor<double> x = fg::linspace<double>(-1, 1, 17);
  fg::tensor<double> w = fg::linspace<double>(0.5, 2, 17);
  fg::gradient_tape g;
  g.watch(x);
  auto& c = fg::core::counters();
  SECTION("two tensors") {
    fg::tensor<double> y = fg::sum(fg::exp(x) * w);
    const auto p = c.passes;
    fg::tensor<double> dx = g.gradient(y, x);
    CHECK(c.passes - p == 1);
    for (std::size_t i = 0; i < 17; ++i) CHECK(dx.data()[i] == Approx(std::exp(x.data()[i]) * w.data()[i]));
  }
  SECTION("no costly op") {
    fg::tensor<double> y = fg::sum(x * x * 3.0);
    const auto p = c.passes;
    fg::tensor<double> dx = g.gradient(y, x);
    CHECK(c.passes - p == 1);
    for (std::size_t i = 0; i < 17; ++i) CHECK(dx.data()[i] == Approx(6 * x.data()[i]));
  }
  SECTION("a tensor no tape tracks") {
    const auto live = c.live_buffers;
    fg::tensor<double> y = fg::exp(w) + fg::log(w);
    CHECK(c.live_buffers == live + 1);  // y, and no derivative
    CHECK(g.size() == 0);
  }
}

TEST_CASE("a saved derivative lives with its tape entry", "[tape][memory][saved]") {
  auto& c = fg::core::counters();
  const auto live0 = c.live_buffers;
  {
    fg::tensor<double> x = fg::linspace<double>(0, 1, 1000);
    fg::gradient_tape tape;
    tape.watch(x);
    fg::tensor<double> y = fg::sum(fg::exp(x) * fg::cos(x));
    CHECK(c.live_buffers == live0 + 3);  // x, y, and the derivative the tape keeps
    fg::tensor<double> g = tape.gradient(y, x);
    CHECK(c.live_buffers == live0 + 3);  // x, y, g (the derivative itself, handed over)
    CHECK(tape.size() == 0);
  }
  CHECK(c.live_buffers == live0);
}
