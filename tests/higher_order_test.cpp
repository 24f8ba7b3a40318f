// Higher-order derivatives: backward passes are recorded by outer tapes, for every op, to any order.
#include <catch2/catch.hpp>
#include <fusegrad/fusegrad.hpp>

#include <cmath>

#include "higher_order_cases.hpp"

namespace {
/// The first three derivatives of f at v, through three nested tapes.
template <class F>
std::array<double, 3> three_derivatives(F f, double v) {
  fg::tensor<double> x = v;
  fg::gradient_tape t3;
  t3.watch(x);
  fg::tensor<double> d1, d2;
  {
    fg::gradient_tape t2;
    t2.watch(x);
    {
      fg::gradient_tape t1;
      t1.watch(x);
      fg::tensor<double> y = f(x);
      d1 = t1.gradient(y, x);
    }
    d2 = t2.gradient(d1, x);
  }
  fg::tensor<double> d3 = t3.gradient(d2, x);
  return {d1.item(), d2.item(), d3.item()};
}
}  // namespace

TEST_CASE("third derivatives of exp, sin, log, tanh, sigmoid and pow match calculus", "[higher_order]") {
  const double v = 0.7;
  auto e = three_derivatives([](const auto& x) { return fg::tensor<double>(fg::exp(2 * x)); }, v);
  CHECK(e[0] == Approx(2 * std::exp(2 * v)));
  CHECK(e[1] == Approx(4 * std::exp(2 * v)));
  CHECK(e[2] == Approx(8 * std::exp(2 * v)));
  auto s = three_derivatives([](const auto& x) { return fg::tensor<double>(fg::sin(x)); }, v);
  CHECK(s[0] == Approx(std::cos(v)));
  CHECK(s[1] == Approx(-std::sin(v)));
  CHECK(s[2] == Approx(-std::cos(v)));
  auto l = three_derivatives([](const auto& x) { return fg::tensor<double>(fg::log(x)); }, v);
  CHECK(l[2] == Approx(2 / (v * v * v)));
  auto t = three_derivatives([](const auto& x) { return fg::tensor<double>(fg::tanh(x)); }, v);
  const double th = std::tanh(v);
  CHECK(t[0] == Approx(1 - th * th));
  CHECK(t[1] == Approx(-2 * th * (1 - th * th)));
  CHECK(t[2] == Approx(-2 * (1 - th * th) * (1 - 3 * th * th)));
  auto sg = three_derivatives([](const auto& x) { return fg::tensor<double>(fg::sigmoid(x)); }, v);
  const double sv = 1 / (1 + std::exp(-v));
  CHECK(sg[1] == Approx(sv * (1 - sv) * (1 - 2 * sv)));
  auto p = three_derivatives([](const auto& x) { return fg::tensor<double>(fg::pow(x, 3.5)); }, v);
  CHECK(p[2] == Approx(3.5 * 2.5 * 1.5 * std::pow(v, 0.5)));
}

TEST_CASE("third derivative through a fused chain with repeated leaves and a reduction", "[higher_order]") {
  // f(x) = sum(x^2 * sin(x)) on one element: f''' = -x^2 cos x - 6 x sin x + 6 cos x
  const double v = 1.3;
  auto d = three_derivatives([](const auto& x) { return fg::sum(x * x * fg::sin(x)); }, v);
  CHECK(d[2] == Approx(-v * v * std::cos(v) - 6 * v * std::sin(v) + 6 * std::cos(v)));
}

TEST_CASE("a persistent tape records its own gradient computation", "[higher_order]") {
  fg::tensor<double> x = 2.0;
  fg::gradient_tape tape({.persistent = true});
  tape.watch(x);
  fg::tensor<double> y = fg::exp(x) * x;
  fg::tensor<double> g1 = tape.gradient(y, x);
  fg::tensor<double> g2 = tape.gradient(g1, x);
  fg::tensor<double> g3 = tape.gradient(g2, x);
  CHECK(g1.item() == Approx(std::exp(2.0) * 3));
  CHECK(g2.item() == Approx(std::exp(2.0) * 4));
  CHECK(g3.item() == Approx(std::exp(2.0) * 5));
}

TEST_CASE("second derivatives through broadcasting reduce to the right shapes", "[higher_order]") {
  fg::tensor<double> a = {{1.0}, {2.0}};  // (2, 1)
  fg::tensor<double> b = {3.0, 4.0, 5.0};   // (3,)
  fg::gradient_tape outer;
  outer.watch(a);
  outer.watch(b);
  fg::tensor<double> ga;
  {
    fg::gradient_tape inner;
    inner.watch(a);
    fg::tensor<double> y = fg::sum(a * a * b);
    ga = inner.gradient(y, a);  // 2 a * sum(b) = (24, 48)
  }
  CHECK(ga.shape() == fg::shape{2, 1});
  CHECK(ga.data()[1] == 48.0);
  auto [gaa, gab] = outer.gradient(ga, std::tie(a, b));
  CHECK(gaa.data()[0] == 24.0);   // d/da sum(2 a sum(b)) = 2 * 12
  CHECK(gab.data()[0] == 6.0);    // d/db_j sum_i 2 a_i sum(b) = 2 (1 + 2)
}

TEST_CASE("a third derivative through a broadcast, whose recorded backward reshapes its upstream gradient",
          "[higher_order]") {
  // fg_test::third_order_through_broadcast: a = [[1], [2]], b = [3, 4, 5], A = 5, S = 3.
  const auto [gb, ga, gaa] = fg_test::third_order_through_broadcast();
  REQUIRE(gb.shape() == fg::shape{3});
  CHECK(gb.data()[2] == 5.0);
  REQUIRE(ga.shape() == fg::shape{2, 1});
  CHECK(ga.data()[0] == Approx(60.0));   // 12 A a_i
  CHECK(ga.data()[1] == Approx(120.0));
  REQUIRE(gaa.shape() == fg::shape{2, 1});
  CHECK(gaa.data()[0] == Approx(12.0 * (2 * 1.0 * 3.0 + 5.0)));  // 12 (2 a_k S + A)
  CHECK(gaa.data()[1] == Approx(12.0 * (2 * 2.0 * 3.0 + 5.0)));
}

TEST_CASE("third derivatives of sqrt, rsqrt and reciprocal match calculus with their zero-upstream rules",
          "[higher_order]") {
  // Their rules give 0 where the upstream is 0 (Note [zero upstream], ops/unary.hpp); that
  // changes none of the derivatives where the upstream is not 0.
  const double v = 0.7;
  auto s = three_derivatives([](const auto& x) { return fg::tensor<double>(fg::sqrt(x)); }, v);
  CHECK(s[0] == Approx(0.5 * std::pow(v, -0.5)));
  CHECK(s[1] == Approx(-0.25 * std::pow(v, -1.5)));
  CHECK(s[2] == Approx(0.375 * std::pow(v, -2.5)));
  auto r = three_derivatives([](const auto& x) { return fg::tensor<double>(fg::rsqrt(x)); }, v);
  CHECK(r[0] == Approx(-0.5 * std::pow(v, -1.5)));
  CHECK(r[1] == Approx(0.75 * std::pow(v, -2.5)));
  CHECK(r[2] == Approx(-1.875 * std::pow(v, -3.5)));
  auto q = three_derivatives([](const auto& x) { return fg::tensor<double>(fg::reciprocal(x)); }, v);
  CHECK(q[0] == Approx(-1 / (v * v)));
  CHECK(q[1] == Approx(2 / (v * v * v)));
  CHECK(q[2] == Approx(-6 / (v * v * v * v)));
  // Through where's zero upstream: d2/dv2 sum(where(v > 0, sqrt(v), 0)) at v = 4 is -v^-1.5 / 4.
  fg::tensor<double> x = {-1.0, 4.0};
  fg::gradient_tape outer;
  outer.watch(x);
  fg::tensor<double> d1;
  {
    fg::gradient_tape inner;
    inner.watch(x);
    d1 = inner.gradient(fg::reduce_sum(fg::where(x > 0, fg::sqrt(x), 0)), x);
  }
  CHECK(d1.data()[0] == 0.0);
  CHECK(d1.data()[1] == 0.25);
  const fg::tensor<double> d2 = outer.gradient(d1, x);
  CHECK(d2.data()[1] == Approx(-0.03125));
}
