// Every differentiable op in the test-side op list, checked against central finite differences
// in double precision, first and second order, on fresh random inputs (seed printed on failure).
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

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
/// Requires that f() throws fg::value_error naming log as the op that made NaN from operands
/// of shape `shape`, and not the reshape to a reduction's result shape.
template <class F>
void check_by_log(F&& f, const char* shape = "operands of shape (2, 2)") {
  try {
    f();
    FAIL("no error: expected check_numerics to name log");
  } catch (const fg::value_error& e) {
    const std::string m = e.what();
    CHECK_THAT(m, Catch::Contains("'log' produced NaN"));
    CHECK_THAT(m, Catch::Contains(shape));
    CHECK_THAT(m, !Catch::Contains("reshape"));
  }
}
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

TEST_CASE("enable_check_numerics names the op of a fused chain inside a reduction, keepdims or not, and op by op",
          "[debugging]") {
  const numerics_checks_on on;
  const fg::tensor<float> m = {{-1.f, 2.f}, {3.f, 4.f}};  // log(-2) is NaN, log(2 * 3) finite
  using reduction = std::function<fg::tensor<float>(const fg::tensor<float>&, const fg::axes&, bool)>;
  const std::vector<std::pair<const char*, reduction>> reductions = {
      {"reduce_max", [](const auto& t, const auto& a, bool k) { return fg::reduce_max(fg::log(t * 2.f) + 1.f, a, k); }},
      {"reduce_min", [](const auto& t, const auto& a, bool k) { return fg::reduce_min(fg::log(t * 2.f) + 1.f, a, k); }},
      {"reduce_sum", [](const auto& t, const auto& a, bool k) { return fg::reduce_sum(fg::log(t * 2.f) + 1.f, a, k); }},
      {"reduce_mean", [](const auto& t, const auto& a, bool k) { return fg::reduce_mean(fg::log(t * 2.f) + 1.f, a, k); }},
      {"reduce_prod", [](const auto& t, const auto& a, bool k) { return fg::reduce_prod(fg::log(t * 2.f) + 1.f, a, k); }},
      {"reduce_logsumexp",
       [](const auto& t, const auto& a, bool k) { return fg::reduce_logsumexp(fg::log(t * 2.f) + 1.f, a, k); }},
  };
  for (const auto& [name, f] : reductions)
    for (bool keepdims : {false, true})
      for (const fg::axes& ax : {fg::axes{}, fg::axes(1), fg::axes{0, 1}})
        for (bool taped : {false, true}) {
          INFO(name << ", keepdims " << keepdims << ", " << (ax.all ? 0 : ax.list.size()) << " axes, under a tape "
                    << taped);
          fg::gradient_tape tape;  // records only when it watches m
          if (taped) tape.watch(m);
          check_by_log([&] { return f(m, ax, keepdims); });
        }
  // A reduction of finite values that is not finite is named itself, with keepdims too.
  const fg::tensor<float> big = {{3e38f, 3e38f}};
  CHECK_THROWS_WITH(fg::reduce_sum(big * 1.f, {}, true), Catch::Contains("'reduce_sum' produced Inf"));
  CHECK_THROWS_WITH(fg::reduce_sum(big, 1, true), Catch::Contains("'reduce_sum' produced Inf"));
  CHECK_THROWS_WITH(fg::reduce_prod(big + 0.f, 1, true), Catch::Contains("'reduce_prod' produced Inf"));
  CHECK_THROWS_WITH(fg::reduce_prod(big + 0.f), Catch::Contains("'reduce_prod' produced Inf"));
  CHECK_THROWS_WITH(fg::reduce_mean(fg::zeros<float>({2, 0}) * 2.f, 1, true),
                    Catch::Contains("'reduce_mean' produced NaN"));
  // Boundary and nn ops whose operand chain made the NaN name that op, not themselves.
  check_by_log([&] { return fg::matmul(fg::log(m * 2.f), m); });
  check_by_log([&] { return fg::softmax(fg::log(m * 2.f)); });
  check_by_log([&] { return fg::log_softmax(fg::log(m * 2.f), 0); });
  check_by_log([&] { return fg::softmax_cross_entropy_with_logits(fg::ones<float>({2, 2}), fg::log(m * 2.f)); });
  check_by_log([&] { return fg::sparse_softmax_cross_entropy_with_logits(fg::tensor<int>{0, 1}, fg::log(m * 2.f)); });
  check_by_log([&] { return fg::tensor<float>(fg::sigmoid_cross_entropy_with_logits(m, fg::log(m * 2.f))); });
  check_by_log([&] { return fg::cumsum(fg::log(m * 2.f), 1); });
  check_by_log([&] { return fg::transpose(fg::log(m * 2.f)); });
  const fg::tensor<float> images = fg::reshape(m, {1, 2, 2, 1});
  check_by_log([&] { return fg::conv2d(fg::log(images * 2.f), fg::ones<float>({1, 1, 1, 1}), 1, "VALID"); },
               "operands of shape (1, 2, 2, 1)");
  CHECK_THROWS_WITH(fg::max_pool2d(fg::log(images * 2.f), 2, 1, "VALID"), Catch::Contains("'log' produced NaN"));
  CHECK_THROWS_WITH(fg::fused_batch_norm(fg::log(images * 2.f), fg::ones<float>({1}), fg::zeros<float>({1})).y,
                    Catch::Contains("'log' produced NaN"));
  // The ops that make it themselves are named: softmax of +inf is NaN (inf - inf).
  CHECK_THROWS_WITH(fg::softmax(fg::tensor<float>{inf_f, 1.f}), Catch::Contains("'softmax' produced NaN"));
  // Op by op: the same op is named.
  check_by_log([&] { return fg::eager::evaluate_unfused(fg::exp(fg::log(m * 2.f) * 2.f)); });
  CHECK_THROWS_WITH(fg::eager::evaluate_unfused(fg::exp(m * 100.f) + 1.f), Catch::Contains("'exp' produced Inf"));
  // Gradients: finite forward values whose gradient is Inf name the op whose gradient it is,
  // through a reduction with keepdims and through matmul.
  const fg::tensor<float> z = {{0.f, 0.f}};
  for (bool keepdims : {false, true}) {
    INFO("keepdims " << keepdims);
    fg::gradient_tape tape;
    tape.watch(z);
    const fg::tensor<float> y = fg::reduce_max(fg::sqrt(z) * 3.f, 1, keepdims);
    CHECK_THROWS_WITH(tape.gradient(y, z), Catch::Contains("the gradient of 'sqrt") && Catch::Contains("holds Inf"));
  }
  {
    fg::gradient_tape tape;
    tape.watch(z);
    const fg::tensor<float> y = fg::matmul(fg::sqrt(z), fg::ones<float>({2, 3}));
    CHECK_THROWS_WITH(tape.gradient(y, z), Catch::Contains("the gradient of 'sqrt") && Catch::Contains("holds Inf"));
  }
  // Finite results pass, keepdims included.
  const fg::tensor<float> fine = fg::reduce_max(fg::log(fg::abs(m)) + 1.f, 1, true);
  CHECK(fine.shape() == fg::shape{2, 1});
  CHECK(fine.data()[1] == Approx(std::log(4.0) + 1.0));
}
