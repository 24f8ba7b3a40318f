// Gradient tapes: the seeds' numbers, persistence, nesting, fused backward passes.
#include <catch2/catch.hpp>
#include <cmath>
#include <fusegrad/fusegrad.hpp>

TEST_CASE("seed 000 example 1: gradient of 3x^2 at 3 is 18", "[tape]") {
  fg::tensor<float> x = 3.0f;
  fg::gradient_tape g;
  g.watch(x);
  fg::tensor<float> y = 3 * x * x;
  fg::tensor<float> dy_dx = g.gradient(y, x);
  CHECK(dy_dx.item() == 18.0f);
}

TEST_CASE("seed 000: a persistent tape gives 81 and then 54 for 3x^3 at 3", "[tape]") {
  fg::tensor<float> x = 3.0f;
  fg::gradient_tape g({.persistent = true});
  g.watch(x);
  fg::tensor<float> y = 3 * x * x * x;
  fg::tensor<float> dy_dx = g.gradient(y, x);
  fg::tensor<float> d2 = g.gradient(dy_dx, x);
  CHECK(dy_dx.item() == 81.0f);
  CHECK(d2.item() == 54.0f);
}

TEST_CASE("a second gradient() on a non-persistent tape throws the seeds' error", "[tape][errors]") {
  fg::tensor<float> x = 3.0f;
  fg::gradient_tape g;
  g.watch(x);
  fg::tensor<float> y = x * x;
  (void)g.gradient(y, x);
  CHECK_THROWS_AS(g.gradient(y, x), std::runtime_error);
  CHECK_THROWS_WITH(g.gradient(y, x), Catch::Contains("only be called once on non-persistent tapes"));
}

TEST_CASE("the gradient of a fused chain matches the analytic derivative", "[tape][fusion]") {
  fg::tensor<double> x = fg::linspace<double>(-3, 3, 101);
  fg::gradient_tape g;
  g.watch(x);
  auto& c = fg::core::counters();
  const auto p0 = c.passes;
  fg::tensor<double> loss = fg::sum(fg::log(1 + fg::exp(x)) * fg::sigmoid(x) + x * x);
  CHECK(c.passes - p0 == 1);
  fg::tensor<double> dx = g.gradient(loss, x);
  // Backward: one block pass for all inputs when no tape records the step (Note [block
  // backward]); the same expression evaluated elementwise has no saved derivative. With the
  // derivative saved in the forward pass the loss's step makes no pass at all
  // (saved_derivative_test.cpp).
  fg::gradient_tape outer;
  outer.watch(x);
  fg::tensor<double> y2 = fg::log(1 + fg::exp(x)) * fg::sigmoid(x) + x * x;
  const auto p1 = c.passes;
  fg::tensor<double> dx2 = outer.gradient(y2, x);
  CHECK(c.passes - p1 == 1);
  for (std::size_t i = 0; i < 101; ++i) {
    CHECK(dx2.data()[i] == Approx(dx.data()[i]).epsilon(1e-12).margin(1e-14));
    const double v = x.data()[i];
    const double s = 1 / (1 + std::exp(-v));
    const double ref = s * s + std::log1p(std::exp(v)) * s * (1 - s) + 2 * v;
    CHECK(dx.data()[i] == Approx(ref).epsilon(1e-12));
  }
}

TEMPLATE_TEST_CASE("a backward pass over two inputs keeps every SIMD lane", "[tape][fusion]", float, double) {
  // Two inputs in one expression, each at two positions (Note [block backward]); 37 elements
  // cover full AVX-512 batches and a tail.
  fg::tensor<TestType> x = fg::linspace<TestType>(-1, 1, 37);
  fg::tensor<TestType> w = fg::linspace<TestType>(0.5, 2, 37);
  fg::gradient_tape g({.persistent = true});
  g.watch(x);
  g.watch(w);
  fg::tensor<TestType> y = fg::sum(fg::exp(x) * w + x * w);
  fg::tensor<TestType> dx = g.gradient(y, x), dw = g.gradient(y, w);
  for (std::size_t i = 0; i < 37; ++i) {
    const double xi = x.data()[i], wi = w.data()[i];
    CHECK(dx.data()[i] == Approx(std::exp(xi) * wi + wi).epsilon(1e-5));
    CHECK(dw.data()[i] == Approx(std::exp(xi) + xi).epsilon(1e-5).margin(1e-6));
  }
}

TEST_CASE("reduce_prod's gradient is the product of the other elements, zeros included", "[tape][reduce]") {
  SECTION("all axes") {
    fg::tensor<double> x(fg::shape{4}, std::vector<double>{2, 0, 3, 5});
    fg::gradient_tape g;
    g.watch(x);
    fg::tensor<double> y = fg::reduce_prod(x);
    fg::tensor<double> dx = g.gradient(y, x);
    const double want[] = {0, 30, 0, 0};
    for (std::size_t i = 0; i < 4; ++i) CHECK(dx.data()[i] == want[i]);
  }
  SECTION("two zeros") {
    fg::tensor<double> x(fg::shape{3}, std::vector<double>{0, 4, 0});
    fg::gradient_tape g;
    g.watch(x);
    fg::tensor<double> dx = g.gradient(fg::reduce_prod(x), x);
    for (std::size_t i = 0; i < 3; ++i) CHECK(dx.data()[i] == 0);
  }
  SECTION("one axis of a matrix, with an upstream gradient") {
    fg::tensor<double> x(fg::shape{2, 3}, std::vector<double>{1, 0, 3, 2, 4, 5});
    fg::tensor<double> up(fg::shape{2}, std::vector<double>{10, 100});
    fg::gradient_tape g({.persistent = true});
    g.watch(x);
    fg::tensor<double> rows = fg::reduce_prod(x, 1);  // {0, 40}
    fg::tensor<double> d_rows = g.gradient(rows, x, up);
    const double want_rows[] = {0, 30, 0, 2000, 1000, 800};
    for (std::size_t i = 0; i < 6; ++i) CHECK(d_rows.data()[i] == want_rows[i]);
    fg::tensor<double> cols = fg::reduce_prod(x, 0, true);  // {{2, 0, 15}}
    fg::tensor<double> d_cols = g.gradient(cols, x);
    const double want_cols[] = {2, 4, 5, 1, 0, 3};
    for (std::size_t i = 0; i < 6; ++i) CHECK(d_cols.data()[i] == want_cols[i]);
  }
  SECTION("second derivative through the rule (no zeros)") {
    fg::tensor<double> x(fg::shape{3}, std::vector<double>{2, 3, 5});
    fg::gradient_tape outer;
    outer.watch(x);
    fg::tensor<double> dx;
    {
      fg::gradient_tape inner;
      inner.watch(x);
      dx = inner.gradient(fg::reduce_prod(x), x);  // {15, 10, 6}
    }
    // d/dx_j of sum_i prod_{k != i} x_k = sum_{i != j} prod_{k != i, j} x_k.
    fg::tensor<double> d2 = outer.gradient(fg::sum(dx), x);
    CHECK(dx.data()[0] == 15);
    CHECK(d2.data()[0] == Approx(5 + 3));
    CHECK(d2.data()[1] == Approx(5 + 2));
    CHECK(d2.data()[2] == Approx(3 + 2));
  }
}

namespace {
/// The flat position in a tensor of shape s (right-aligned to iter, broadcast) of the element
/// at flat position i of iter.
std::size_t broadcast_position(const fg::shape& s, const fg::shape& iter, std::size_t i) {
  std::size_t pos = 0, stride = 1;
  for (std::size_t d = iter.rank(); d-- > 0;) {
    const std::size_t idx = i % iter[d];
    i /= iter[d];
    const std::size_t off = iter.rank() - s.rank();
    if (d >= off && s[d - off] != 1) pos += idx * stride;
    if (d >= off) stride *= s[d - off];
  }
  return pos;
}
}  // namespace

TEST_CASE("a fused backward pass over broadcast operands sums each gradient into its shape", "[tape][fusion]") {
  // h = relu(a + b) * c, then y = sum(h), on the host, with no tape recording the backward step
  // (h's backward is the block backward pass): b and c broadcast in patterns that cut blocks of 256 elements inside rows,
  // repeat one element along the last axis, or hold whole inner rows. Against a loop in double.
  struct pattern {
    fg::shape iter, b, c;
  };
  const std::vector<pattern> patterns = {{{5, 300}, {300}, {5, 1}},          {{4, 3, 200}, {3, 1}, {200}},
                                         {{2, 3, 130}, {2, 1, 130}, {3, 1}}, {{600, 2}, {1, 2}, {600, 1}},
                                         {{3, 70, 4}, {70, 1}, {1, 70, 4}},  {{1000}, {1}, {1000}}};
  for (const pattern& p : patterns) {
    CAPTURE(p.iter, p.b, p.c);
    const std::size_t n = p.iter.elements();
    const fg::tensor<double> a = fg::random::uniform<double>(p.iter, 1, -1, 1),
                             b = fg::random::uniform<double>(p.b, 2, -1, 1),
                             c = fg::random::uniform<double>(p.c, 3, -1, 1);
    fg::gradient_tape tape;
    tape.watch(a);
    tape.watch(b);
    tape.watch(c);
    const fg::tensor<double> h = fg::relu(a + b) * c;  // one evaluation: its backward is one pass
    const fg::tensor<double> y = fg::reduce_sum(h);
    const std::vector<fg::tensor<double>> g = tape.gradient(y, std::vector<fg::tensor<double>>{a, b, c});
    std::vector<double> da(n, 0), db(p.b.elements(), 0), dc(p.c.elements(), 0);
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t ib = broadcast_position(p.b, p.iter, i), ic = broadcast_position(p.c, p.iter, i);
      const double z = a.data()[i] + b.data()[ib];
      const double on = z > 0 ? c.data()[ic] : 0;
      da[i] += on;
      db[ib] += on;
      dc[ic] += z > 0 ? z : 0;
    }
    const std::vector<const std::vector<double>*> want = {&da, &db, &dc};
    for (std::size_t k = 0; k < 3; ++k) {
      REQUIRE(g[k].size() == want[k]->size());
      for (std::size_t j = 0; j < want[k]->size(); ++j) CHECK(g[k].data()[j] == Approx((*want[k])[j]).epsilon(1e-12));
    }
  }
}
