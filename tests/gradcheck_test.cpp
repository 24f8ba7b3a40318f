// Every differentiable op in the test-side op list, checked against central finite differences
// in double precision, first and second order, on fresh random inputs (seed printed on failure).
#include <catch2/catch.hpp>

#include <random>

#include "op_list.hpp"

namespace {
fg::tensor<double> uniform(const fg::shape& s, double lo, double hi, std::mt19937_64& rng) {
  fg::tensor<double> t(s, fg::device::cpu());
  std::uniform_real_distribution<double> u(lo, hi);
  for (std::size_t i = 0; i < t.size(); ++i) t.buffer()->data[i] = u(rng);
  return t;
}
}  // namespace

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
