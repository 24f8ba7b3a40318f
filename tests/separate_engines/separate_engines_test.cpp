// A program built with FUSEGRAD_SEPARATE_ENGINES (Note [separate engines]): three units, the
// engines defined in one of them (engines.cpp), tapes made in two (this one and other_unit.cpp).
#include <catch2/catch.hpp>
#include <cmath>
#include <fusegrad/fusegrad.hpp>

#if !defined(FUSEGRAD_SEPARATE_ENGINES)
#error "this program is built with FUSEGRAD_SEPARATE_ENGINES"
#endif

// other_unit.cpp: the gradient of log(1 + exp(x)) at x, taken there.
double softplus_gradient(double x);

TEST_CASE("separate engines: a gradient taken in this unit", "[separate_engines]") {
  fg::tensor<float> x = {0.5f, -1.f, 2.f};
  fg::gradient_tape tape;
  tape.watch(x);
  fg::tensor<float> y = fg::sum(fg::exp(x) * x);
  fg::tensor<float> dx = tape.gradient(y, x);
  for (std::size_t i = 0; i < 3; ++i) {
    const double v = x.data()[i];
    CHECK(dx.data()[i] == Approx(std::exp(v) * (1 + v)).epsilon(1e-6));  // d/dx x e^x
  }
}

TEST_CASE("separate engines: a gradient taken in another unit", "[separate_engines]") {
  for (double x : {-3.0, 0.0, 0.7}) CHECK(softplus_gradient(x) == Approx(1 / (1 + std::exp(-x))).epsilon(1e-12));
}

TEST_CASE("separate engines: a second derivative (the replay engines)", "[separate_engines]") {
  fg::tensor<double> x = 2.0;
  fg::gradient_tape outer;
  outer.watch(x);
  fg::tensor<double> dy;
  {
    fg::gradient_tape inner;
    inner.watch(x);
    fg::tensor<double> y = x * x * x;
    dy = inner.gradient(y, x);  // 3 x^2, recorded by the outer tape
  }
  CHECK(dy.item() == Approx(12.0));
  CHECK(outer.gradient(dy, x).item() == Approx(12.0));  // 6 x
}
