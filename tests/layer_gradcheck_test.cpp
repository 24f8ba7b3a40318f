// Every layer in the test-side layer list, checked in float64 against central finite
// differences: the gradient with respect to the input (first and second order, through
// fg::testing::check_gradients) and with respect to each trainable variable.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "layer_list.hpp"
#include "test_helpers.hpp"

using fg_test::uniform;

namespace {
/// The largest error, relative as check_gradients measures it, between the tape's gradient of
/// sum(layer(x) * w) with respect to the variable v and central differences over v's elements.
double variable_gradient_error(fg_test::layer_under_test& l, const fg::tensor<double>& x, const fg::tensor<double>& w,
                               fg::variable<double> v) {
  auto scalar = [&] { return fg::tensor<double>(fg::reduce_sum(l.call(x) * w)); };
  fg::tensor<double> analytic;
  {
    fg::gradient_tape tape;
    analytic = tape.gradient(scalar(), v);
  }
  REQUIRE(analytic.defined());
  const fg::tensor<double> v0 = v.peek();
  const std::vector<double> base(v0.data(), v0.data() + v0.size());
  double worst = 0;
  const double h = 1e-6;
  for (std::size_t i = 0; i < base.size(); ++i) {
    auto at = [&](double d) {
      std::vector<double> p = base;
      p[i] += d;
      v.assign(fg::tensor<double>(v.shape(), p));
      return scalar().item();
    };
    const double numeric = (at(h) - at(-h)) / (2 * h);
    worst = std::max(worst, std::abs(analytic.data()[i] - numeric) / std::max(1.0, std::abs(numeric)));
  }
  v.assign(v0);
  return worst;
}
}  // namespace

TEST_CASE("every layer's gradients match finite differences, to its input and to its variables", "[layers][gradcheck]") {
  const std::uint64_t seed = 20261127;  // fixed: kinks (relu, max) stay away from the probes
  std::mt19937_64 rng(seed);
  const auto cases = fg_test::layers();
  REQUIRE(cases.size() >= 30);
  for (const auto& c : cases) {
    INFO("layer case " << c.name << ", seed " << seed);
    fg_test::layer_under_test l = c.make();
    const fg::tensor<double> x = uniform(c.input, c.lo, c.hi, rng);
    const fg::tensor<double> y = l.call(x);  // builds the layer's variables
    fg::testing::gradient_check_options o;
    o.second_order = c.second_order;
    o.seed = rng();
    const auto r = fg::testing::check_gradients([&](const std::vector<fg::tensor<double>>& in) { return l.call(in[0]); },
                                                {x}, o);
    INFO(r.report);
    CHECK(r.ok);
    const fg::tensor<double> w = uniform(y.shape(), -1.5, 1.5, rng);
    for (const fg::nn::named_variable& nv : l.weights()) {
      if (!nv.trainable()) continue;
      INFO("variable " << nv.name);
      CHECK(variable_gradient_error(l, x, w, std::get<fg::variable<double>>(nv.value)) < 1e-6);
    }
  }
}

TEST_CASE("the layer check catches a wrong variable gradient", "[layers][gradcheck]") {
  // A layer whose variable enters twice but is differentiated once must fail the check.
  fg::variable<double> v(fg::tensor<double>{0.5, -1.0}, "v");
  fg_test::layer_under_test wrong{[v](const fg::tensor<double>& x) {
                                    const fg::tensor<double> frozen = fg::stop_gradient(v.value());
                                    return fg::tensor<double>(x * v * frozen);
                                  },
                                  [v] { return std::vector<fg::nn::named_variable>{{"v", v}}; }};
  std::mt19937_64 rng(1);
  const fg::tensor<double> x = uniform({3, 2}, -1, 1, rng), w = uniform({3, 2}, -1, 1, rng);
  CHECK(variable_gradient_error(wrong, x, w, v) > 0.1);
}
