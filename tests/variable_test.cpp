// fg::variable: assignment, automatic watching, gradients, and the seed 002 model.
#include <catch2/catch.hpp>
#include <fusegrad/fusegrad.hpp>

TEST_CASE("a variable holds a value, a name and a trainable flag", "[variable]") {
  fg::variable<float> v(fg::tensor<float>{1.f, 2.f}, "weights");
  CHECK(v.name() == "weights");
  CHECK(v.trainable());
  CHECK(v.shape() == fg::shape{2});
  v.assign(fg::tensor<float>{3.f, 4.f});
  CHECK(v.value().data()[1] == 4.f);
  v.assign_add(fg::tensor<float>{1.f, 1.f});
  v.assign_sub(0.5f);
  CHECK(v.value().data()[0] == 3.5f);
}

TEST_CASE("assign with a different shape throws and leaves the variable unchanged", "[variable][errors]") {
  fg::variable<float> v(fg::tensor<float>{1.f, 2.f}, "v");
  CHECK_THROWS_AS(v.assign(fg::tensor<float>{1.f, 2.f, 3.f}), std::invalid_argument);
  CHECK_THROWS_WITH(v.assign(fg::tensor<float>{1.f, 2.f, 3.f}), Catch::Contains("'v'") && Catch::Contains("(3,)"));
  CHECK(v.peek().data()[1] == 2.f);
}

TEST_CASE("trainable variables read under a tape are watched automatically", "[variable][tape]") {
  fg::variable<float> w(fg::tensor<float>(3.f), "w");
  fg::variable<float> frozen(fg::tensor<float>(5.f), "frozen", false);
  fg::gradient_tape tape;
  fg::tensor<float> y = w * w * frozen;
  auto watched = tape.watched_variables();
  REQUIRE(watched.size() == 1);
  CHECK(watched[0].name() == "w");
  auto [gw, gf] = tape.gradient(y, std::tie(w, frozen));
  CHECK(gw.item() == 30.f);
  CHECK_FALSE(gf.defined());
}

TEST_CASE("watch_accessed_variables = false watches only what is watched explicitly", "[variable][tape]") {
  fg::variable<float> w(fg::tensor<float>(3.f), "w");
  fg::variable<float> u(fg::tensor<float>(2.f), "u");
  fg::gradient_tape tape({.persistent = true, .watch_accessed_variables = false});
  tape.watch(u);
  fg::tensor<float> y = w * u;
  CHECK_FALSE(tape.gradient(y, w).defined());
  CHECK(tape.gradient(y, u).item() == 3.f);
}

TEST_CASE("the gradient of a variable sums over all its reads, across assignments", "[variable][tape]") {
  fg::variable<double> v(fg::tensor<double>(1.0), "v");
  fg::gradient_tape tape;
  fg::tensor<double> y1 = v * 2.0;
  v.assign(fg::tensor<double>(10.0));
  fg::tensor<double> y2 = v * 3.0;
  CHECK(tape.gradient(y1 + y2, v).item() == 5.0);
}

TEST_CASE("a variable's old buffer is freed when reassigned, unless a tape needs it", "[variable][memory]") {
  auto& c = fg::core::counters();
  fg::variable<double> v(fg::zeros<double>({100}), "v");
  const auto live0 = c.live_buffers;
  v.assign(fg::ones<double>({100}));
  CHECK(c.live_buffers == live0);  // the zeros buffer went with its last handle
  {
    fg::gradient_tape tape;
    fg::tensor<double> y = fg::sum(v * v);  // the tape saves v's current value
    v.assign(fg::fill<double>({100}, 2.0));
    CHECK(c.live_buffers == live0 + 2);  // v's old value (held by the tape) and y
    CHECK(tape.gradient(y, v).data()[0] == 2.0);  // computed at the old value 1
  }
  CHECK(c.live_buffers == live0);
}

TEST_CASE("seed 002: the linear model y = W x + B trained with tape and variables reaches W = 3, B = 2", "[variable][training]") {
  constexpr int n = 1000;
  fg::tensor<float> inputs = fg::linspace<float>(-2.f, 2.f, n);
  fg::tensor<float> noise = fg::sin(inputs * 37.f);  // deterministic stand-in for noise
  fg::tensor<float> outputs = inputs * 3 + 2 + noise * 0.01f;
  fg::variable<float> W(fg::tensor<float>(5.f), "weight"), B(fg::tensor<float>(10.f), "bias");
  auto loss = [&] { return fg::reduce_mean(fg::square(inputs * W + B - outputs)); };
  const float initial = loss().item();
  for (int i = 0; i < 300; ++i) {
    fg::gradient_tape tape;
    fg::tensor<float> l = loss();
    auto [dW, dB] = tape.gradient(l, std::tie(W, B));
    W.assign_sub(dW * 0.01f);
    B.assign_sub(dB * 0.01f);
  }
  CHECK(loss().item() < initial / 1000);
  CHECK(W.peek().item() == Approx(3.f).margin(0.05));
  CHECK(B.peek().item() == Approx(2.f).margin(0.05));
}
