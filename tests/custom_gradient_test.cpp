// fg::custom_gradient: the seeds' stable log1pexp, clip_gradient_by_norm, variables, several
// inputs and outputs, nesting, and misuse of the gradient function.
#include <catch2/catch.hpp>
#include <fusegrad/fusegrad.hpp>

namespace {
// Seeds 002/003: log(1 + e^x) with the gradient 1 - 1 / (1 + e^x), finite where e^x overflows.
auto log1pexp = fg::custom_gradient([](const fg::tensor<float>& x) {
  fg::tensor<float> e = fg::exp(x);
  auto grad = [e](const fg::tensor<float>& dy) -> fg::tensor<float> { return dy * (1 - 1 / (1 + e)); };
  return std::make_pair(fg::tensor<float>(fg::log(1 + e)), grad);
});

float plain_grad(float v) {
  fg::tensor<float> x = v;
  fg::gradient_tape tape;
  tape.watch(x);
  fg::tensor<float> y = fg::log(1 + fg::exp(x));
  return tape.gradient(y, x).item();
}
float custom_grad(float v) {
  fg::tensor<float> x = v;
  fg::gradient_tape tape;
  tape.watch(x);
  fg::tensor<float> y = log1pexp(x);
  return tape.gradient(y, x).item();
}
}  // namespace

TEST_CASE("log1pexp: gradient 0.5 at 0 with either form", "[custom_gradient]") {
  CHECK(plain_grad(0.f) == 0.5f);
  CHECK(custom_grad(0.f) == 0.5f);
}

TEST_CASE("log1pexp: the plain composition gives NaN at 100, the custom gradient exactly 1", "[custom_gradient]") {
  CHECK(std::isnan(plain_grad(100.f)));
  CHECK(custom_grad(100.f) == 1.0f);
}

TEST_CASE("log1pexp through gradients_function, as in seed 003", "[custom_gradient][functional]") {
  auto grad_log1pexp = fg::gradients_function(log1pexp);
  CHECK(grad_log1pexp(0.f)[0].item() == 0.5f);
  CHECK(grad_log1pexp(100.f)[0].item() == 1.0f);
}

TEST_CASE("seed 002 clip_gradient_by_norm clips the backward pass only", "[custom_gradient]") {
  auto clip_gradient_by_norm = fg::custom_gradient([](const fg::tensor<float>& x, const fg::tensor<float>& norm) {
    fg::tensor<float> y = fg::eval(x);  // identity forward
    auto grad_fn = [norm](const fg::tensor<float>& dy) {
      // tf.clip_by_norm: dy * norm / max(||dy||, norm)
      fg::tensor<float> l2 = fg::sqrt(fg::sum(dy * dy));
      return std::vector<fg::tensor<float>>{fg::tensor<float>(dy * norm / fg::maximum(l2, norm)), fg::tensor<float>()};
    };
    return std::make_pair(y, grad_fn);
  });
  fg::tensor<float> x = {3.f, 4.f};  // the gradient of sum(x * w) is w
  fg::tensor<float> w = {30.f, 40.f};
  fg::tensor<float> n = 5.f;
  fg::gradient_tape tape;
  tape.watch(x);
  fg::tensor<float> y = fg::sum(clip_gradient_by_norm(x, n) * w);
  fg::tensor<float> g = tape.gradient(y, x);
  // ||w|| = 50, clipped to norm 5: w * 5 / 50.
  CHECK(g.data()[0] == Approx(3.f));
  CHECK(g.data()[1] == Approx(4.f));
  CHECK(y.item() == Approx(3 * 30 + 4 * 40));
}

TEST_CASE("a custom gradient with two inputs returns one gradient each", "[custom_gradient]") {
  auto mul = fg::custom_gradient([](const fg::tensor<double>& a, const fg::tensor<double>& b) {
    auto grad = [a, b](const fg::tensor<double>& dy) {
      return std::make_tuple(dy * b * 10, dy * a * 100);  // deliberately scaled to prove it is used
    };
    return std::make_pair(fg::tensor<double>(a * b), grad);
  });
  fg::tensor<double> a = 2.0, b = 3.0;
  fg::gradient_tape tape;
  tape.watch(a);
  tape.watch(b);
  fg::tensor<double> y = mul(a, b);
  auto [ga, gb] = tape.gradient(y, std::tie(a, b));
  CHECK(ga.item() == 30.0);
  CHECK(gb.item() == 200.0);
}

TEST_CASE("a custom gradient with two outputs receives both upstream gradients", "[custom_gradient]") {
  auto split = fg::custom_gradient([](const fg::tensor<double>& x) {
    std::vector<fg::tensor<double>> outs{fg::tensor<double>(2 * x), fg::tensor<double>(3 * x)};
    auto grad = [](const std::vector<fg::tensor<double>>& dys) { return fg::tensor<double>(2 * dys[0] + 3 * dys[1]); };
    return std::make_pair(outs, grad);
  });
  fg::tensor<double> x = 1.5;
  fg::gradient_tape tape;
  tape.watch(x);
  auto ys = split(x);
  fg::tensor<double> z = ys[0] * 5 + ys[1] * 7;
  CHECK(tape.gradient(z, x).item() == 2 * 5 + 3 * 7);
}

TEST_CASE("a custom gradient sees the variables its function reads", "[custom_gradient][variable]") {
  fg::variable<double> v(fg::tensor<double>(4.0), "v");
  auto f = fg::custom_gradient([&v](const fg::tensor<double>& x) {
    fg::tensor<double> y = x * v;
    auto grad = [x](const fg::tensor<double>& dy, const std::vector<fg::variable<double>>& vars) {
      REQUIRE(vars.size() == 1);
      fg::tensor<double> gx = dy * vars[0].peek();
      std::vector<fg::tensor<double>> gv{fg::tensor<double>(dy * x)};
      return std::make_pair(gx, gv);
    };
    return std::make_pair(y, grad);
  });
  fg::tensor<double> x = 3.0;
  fg::gradient_tape tape;
  tape.watch(x);
  fg::tensor<double> y = f(x);
  auto [gx, gv] = tape.gradient(y, std::tie(x, v));
  CHECK(gx.item() == 4.0);
  CHECK(gv.item() == 3.0);
}

TEST_CASE("second derivatives flow through a differentiable gradient function", "[custom_gradient][higher_order]") {
  auto cube = fg::custom_gradient([](const fg::tensor<double>& x) {
    auto grad = [x](const fg::tensor<double>& dy) -> fg::tensor<double> { return dy * 3 * x * x; };
    return std::make_pair(fg::tensor<double>(x * x * x), grad);
  });
  fg::tensor<double> x = 2.0;
  fg::gradient_tape outer;
  outer.watch(x);
  fg::tensor<double> dy;
  {
    fg::gradient_tape inner;
    inner.watch(x);
    fg::tensor<double> y = cube(x);
    dy = inner.gradient(y, x);
  }
  CHECK(dy.item() == 12.0);
  CHECK(outer.gradient(dy, x).item() == 12.0);  // d/dx 3x^2 = 6x
}

TEST_CASE("a gradient function returning the wrong count or shape is a clear error; the tape stays usable",
          "[custom_gradient][errors]") {
  auto bad_count = fg::custom_gradient([](const fg::tensor<double>& a, const fg::tensor<double>& b) {
    auto grad = [](const fg::tensor<double>& dy) { return dy; };
    return std::make_pair(fg::tensor<double>(a + b), grad);
  });
  auto bad_shape = fg::custom_gradient([](const fg::tensor<double>& a) {
    auto grad = [](const fg::tensor<double>&) { return fg::zeros<double>({3}); };
    return std::make_pair(fg::tensor<double>(2 * a), grad);
  });
  fg::tensor<double> a = 1.0, b = 2.0;
  fg::gradient_tape tape({.persistent = true});
  tape.watch(a);
  tape.watch(b);
  fg::tensor<double> y1 = bad_count(a, b);
  fg::tensor<double> y2 = bad_shape(a);
  fg::tensor<double> y3 = a * b;
  CHECK_THROWS_WITH(tape.gradient(y1, a), Catch::Contains("returned 1 gradients but the function has 2 inputs"));
  CHECK_THROWS_AS(tape.gradient(y2, a), std::invalid_argument);
  CHECK_THROWS_WITH(tape.gradient(y2, a), Catch::Contains("(3,)") && Catch::Contains("()"));
  CHECK(tape.gradient(y3, a).item() == 2.0);
}
