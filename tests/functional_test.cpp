// The tfe functional API: gradients_function, value_and_gradients_function, implicit_gradients,
// implicit_value_and_gradients, with the seeds' results.
#include <catch2/catch.hpp>
#include <fusegrad/fusegrad.hpp>

TEST_CASE("seed 004: gradients of x*x + y*y at (2, 3) are (4, 6)", "[functional]") {
  auto g = fg::gradients_function([](const fg::tensor<float>& a, const fg::tensor<float>& b) -> fg::tensor<float> {
    return a * a + b * b;
  });
  auto [ga, gb] = g(fg::tensor<float>(2.f), fg::tensor<float>(3.f));
  CHECK(ga.item() == 4.f);
  CHECK(gb.item() == 6.f);
}

TEST_CASE("seed 003: square at 3 is 9, its gradient 6, and gradients_function of it gives 2", "[functional]") {
  auto square = [](const fg::tensor<float>& x) { return fg::tensor<float>(x * x); };
  auto grad = fg::gradients_function(square);
  auto gradgrad = fg::gradients_function([&](const fg::tensor<float>& x) { return grad(x)[0]; });
  CHECK(square(3.f).item() == 9.f);
  CHECK(grad(3.f)[0].item() == 6.f);
  CHECK(gradgrad(3.f)[0].item() == 2.f);
}

TEST_CASE("value_and_gradients_function returns f's value with the gradients", "[functional]") {
  auto vg = fg::value_and_gradients_function([](const fg::tensor<double>& x) { return fg::sin(x) * x; });
  auto [value, grads] = vg(0.5);
  CHECK(value.item() == Approx(std::sin(0.5) * 0.5));
  CHECK(grads[0].item() == Approx(std::cos(0.5) * 0.5 + std::sin(0.5)));
}

TEST_CASE("gradients_function with arguments of different types returns a tuple", "[functional]") {
  auto g = fg::gradients_function([](const fg::tensor<float>& a, const fg::tensor<double>& b) {
    return fg::cast<double>(a) * b;
  });
  auto [ga, gb] = g(2.f, 5.0);
  STATIC_REQUIRE(std::is_same_v<decltype(ga), fg::tensor<float>>);
  CHECK(ga.item() == 5.f);
  CHECK(gb.item() == 2.0);
}

TEST_CASE("implicit_gradients pairs gradients with exactly the variables f touched", "[functional][variable]") {
  fg::variable<float> w(fg::tensor<float>(3.f), "w"), b(fg::tensor<float>(1.f), "b"), unused(fg::tensor<float>(7.f), "unused");
  auto loss = [&](const fg::tensor<float>& x) { return fg::tensor<float>(fg::square(w * x + b)); };
  auto grads = fg::implicit_gradients(loss)(fg::tensor<float>(2.f));
  REQUIRE(grads.size() == 2);
  // d/dw (wx + b)^2 = 2 (wx + b) x = 2 * 7 * 2; d/db = 2 * 7
  CHECK(grads[0].second.name() == "w");
  CHECK(grads[0].first.item() == 28.f);
  CHECK(grads[1].second.name() == "b");
  CHECK(grads[1].first.item() == 14.f);
  auto [value, vg] = fg::implicit_value_and_gradients(loss)(fg::tensor<float>(2.f));
  CHECK(value.item() == 49.f);
  CHECK(vg.size() == 2);
}

TEST_CASE("seed 001: linear regression converges with implicit gradients and plain gradient descent", "[functional][training]") {
  // y = 3x + 2 plus small noise-free data, as in the seed's regression.
  fg::tensor<float> xs = fg::linspace<float>(-1.f, 1.f, 64);
  fg::tensor<float> ys = 3 * xs + 2;
  fg::variable<float> w(fg::tensor<float>(0.f), "w"), b(fg::tensor<float>(0.f), "b");
  auto loss = [&](const fg::tensor<float>& x, const fg::tensor<float>& y) { return fg::mean(fg::square(w * x + b - y)); };
  auto grad_fn = fg::implicit_gradients(loss);
  for (int step = 0; step < 500; ++step)
    for (auto& [g, v] : grad_fn(xs, ys)) v.assign_sub(0.1f * g);
  CHECK(w.peek().item() == Approx(3.f).margin(1e-3));
  CHECK(b.peek().item() == Approx(2.f).margin(1e-3));
}
