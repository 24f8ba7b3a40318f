// Every differentiable op in the test-side op list, checked against central finite differences
// in double precision, first and second order, on fresh random inputs (seed printed on failure).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

#include "op_list.hpp"
#include "test_helpers.hpp"

using fg_test::uniform;

TEST_CASE("every differentiable op's gradients match finite differences (first and second order)", "[gradcheck]") {
  const std::uint64_t seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  for (const auto& op : fg_test::differentiable_ops()) {
    fg_test::inputs in;
    for (const auto& s : op.shapes) in.push_back(uniform(s, op.lo, op.hi, rng));
    fg::testing::gradient_check_options o;
    o.second_order = op.second_order;
    o.seed = rng();
    const auto r = fg::testing::check_gradients(op.f, in, o);
    INFO("op " << op.name << ", input seed " << seed << ": " << r.report);
    CHECK(r.ok);
  }
}

TEST_CASE("check_gradients reports a wrong gradient", "[gradcheck]") {
  // A custom gradient that is off by a factor of 2 must be caught.
  auto wrong = fg::custom_gradient([](const fg::tensor<double>& x) {
    auto grad = [x](const fg::tensor<double>& dy) -> fg::tensor<double> { return dy * 4 * x; };
    return std::make_pair(fg::tensor<double>(x * x), grad);
  });
  fg::tensor<double> x = {0.5, 1.5};
  const auto r = fg::testing::check_gradients([&](const fg_test::inputs& in) { return wrong(in[0]); }, {x});
  CHECK_FALSE(r.ok);
  CHECK(r.max_error > 0.4);
  CHECK_THAT(r.report, Catch::Contains("analytic") && Catch::Contains("numeric"));
}

namespace {
/// enable_check_numerics for one test, off again however the test ends.
struct numerics_checks_on {
  numerics_checks_on() { fg::debugging::enable_check_numerics(); }
  ~numerics_checks_on() { fg::debugging::disable_check_numerics(); }
  numerics_checks_on(const numerics_checks_on&) = delete;
  numerics_checks_on& operator=(const numerics_checks_on&) = delete;
};
const float nan_f = std::numeric_limits<float>::quiet_NaN();
const float inf_f = std::numeric_limits<float>::infinity();
}  // namespace

TEST_CASE("check_numerics passes finite tensors through and names NaN and Inf as TensorFlow does", "[debugging]") {
  const fg::tensor<float> x = {1.f, -2.f, 3.f};
  const fg::tensor<float> y = fg::debugging::check_numerics(x * 2.f, "doubled");
  CHECK(y.data()[1] == -4.f);
  CHECK_THROWS_WITH(fg::debugging::check_numerics(fg::tensor<float>({1.f, nan_f}), "m"), "m : Tensor had NaN values");
  CHECK_THROWS_WITH(fg::debugging::check_numerics(fg::tensor<float>({inf_f, 1.f}), "m"), "m : Tensor had Inf values");
  CHECK_THROWS_WITH(fg::debugging::check_numerics(fg::tensor<double>({-INFINITY, NAN}), "m"),
                    "m : Tensor had Inf and NaN values");
  CHECK_THROWS_AS(fg::debugging::check_numerics(fg::log(x), "log of x"), fg::value_error);
  // Its gradient is the upstream gradient, checked too.
  fg::gradient_tape tape({.persistent = true});
  tape.watch(x);
  const fg::tensor<float> z = fg::reduce_sum(fg::square(fg::debugging::check_numerics(x, "x")));
  const fg::tensor<float> g = tape.gradient(z, x);
  for (std::size_t i = 0; i < 3; ++i) CHECK(g.data()[i] == 2.f * x.data()[i]);
  const fg::tensor<float> zero = {0.f, 4.f};
  tape.watch(zero);
  const fg::tensor<float> r = fg::reduce_sum(fg::sqrt(fg::debugging::check_numerics(zero, "zero")));
  CHECK_THROWS_WITH(tape.gradient(r, zero), Catch::Contains("check_numerics") &&
                                               Catch::Contains("detected in gradient. zero : Tensor had Inf values"));
}

TEST_CASE("enable_check_numerics names the first op that makes NaN or Inf, forward and backward", "[debugging]") {
  const fg::tensor<float> x = {1.f, -1.f, 2.f};
  {
    const numerics_checks_on on;
    // A fused chain: the replay finds log, the op that made the NaN, and its operand's shape.
    CHECK_THROWS_WITH(fg::tensor<float>(fg::log(x * 2.f) + 1.f),
                      Catch::Contains("'log' produced NaN") && Catch::Contains("operands of shape (3,)"));
    CHECK_THROWS_WITH(fg::tensor<float>(fg::exp(x * 100.f) * 0.5f), Catch::Contains("'exp' produced Inf"));
    // A reduction whose operand is finite but whose sum is not.
    const fg::tensor<float> big = {3e38f, 3e38f};
    CHECK_THROWS_WITH(fg::reduce_sum(big), Catch::Contains("'reduce_sum' produced Inf"));
    // A boundary op.
    const fg::tensor<float> m = {{3e38f, 3e38f}};
    CHECK_THROWS_WITH(fg::matmul(m, fg::transpose(m)),
                      Catch::Contains("'matmul' produced Inf") && Catch::Contains("operands of shape (1, 2), (2, 1)"));
    // An input that already holds NaN is named as such.
    CHECK_THROWS_WITH(fg::tensor<float>(fg::tensor<float>({nan_f}) + 1.f), Catch::Contains("an input of shape (1,) holds NaN"));
    // Backward: sqrt's gradient at 0 is Inf; the error names the op whose gradient it is.
    const fg::tensor<float> v = {0.f, 4.f};
    fg::gradient_tape tape;
    tape.watch(v);
    const fg::tensor<float> s = fg::reduce_sum(fg::sqrt(v) * 3.f);
    CHECK_THROWS_WITH(tape.gradient(s, v), Catch::Contains("the gradient of 'sqrt") && Catch::Contains("holds Inf"));
    // The same on one element (the scalar path).
    const fg::tensor<float> v1 = 0.f;
    fg::gradient_tape t1;
    t1.watch(v1);
    const fg::tensor<float> s1 = fg::sqrt(v1) * 3.f;
    CHECK_THROWS_WITH(t1.gradient(s1, v1), Catch::Contains("the gradient of 'sqrt") && Catch::Contains("holds Inf"));
    // Nothing of the diagnosis is recorded, and a failing evaluation records nothing.
    fg::gradient_tape t2;
    t2.watch(x);
    CHECK_THROWS_AS(fg::tensor<float>(fg::log(x)), fg::value_error);
    CHECK(t2.size() == 0);
    // Finite results pass, with their gradients.
    const fg::tensor<float> ok = fg::reduce_sum(fg::exp(x));
    CHECK(t2.gradient(ok, x).data()[2] == Approx(std::exp(2.0)));
  }
  // Off again: NaN flows through silently, as by default.
  const fg::tensor<float> quiet = fg::log(x);
  CHECK(std::isnan(quiet.data()[1]));
}
