// A program that mixes the two modes (Note [package mode]): this unit and other_unit.cpp are
// built in package mode and link libfusegrad; header_only_unit.cpp is built header-only. Tapes
// made in one unit record evaluations of the others, so the program has one tape state.
#include <catch2/catch.hpp>
#include <cmath>
#include <fusegrad/fusegrad.hpp>

#if !defined(FUSEGRAD_SEPARATE_ENGINES)
#error "this unit is built in package mode (FUSEGRAD_SEPARATE_ENGINES)"
#endif

double softplus_gradient(double x);  // other_unit.cpp
double cube_gradient(double x);      // header_only_unit.cpp
fg::tensor<double> recorded_here(const fg::tensor<double>& x);
fg::tensor<double> gradient_here(fg::gradient_tape& tape, const fg::tensor<double>& y, const fg::tensor<double>& x);

TEST_CASE("package mode: a gradient taken in this unit", "[mixed_modes]") {
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

TEST_CASE("package mode: gradients taken in another package-mode unit and in a header-only one", "[mixed_modes]") {
  for (double x : {-3.0, 0.0, 0.7}) {
    CHECK(softplus_gradient(x) == Approx(1 / (1 + std::exp(-x))).epsilon(1e-12));
    CHECK(cube_gradient(x) == Approx(3 * x * x).epsilon(1e-12));
  }
}

TEST_CASE("mixed modes: one tape records evaluations of both modes' units", "[mixed_modes]") {
  fg::tensor<double> x = {0.3, -1.2};
  fg::gradient_tape tape({.persistent = true});
  tape.watch(x);
  fg::tensor<double> y = fg::sum(recorded_here(x) + x * x);  // sin(x) x recorded in the header-only unit
  // d/dx = sin x + x cos x + 2x, from a tape made here, taken here and in the header-only unit.
  for (const fg::tensor<double>& g : {tape.gradient(y, x), gradient_here(tape, y, x)}) {
    for (std::size_t i = 0; i < 2; ++i) {
      const double v = x.data()[i];
      CHECK(g.data()[i] == Approx(std::sin(v) + v * std::cos(v) + 2 * v).epsilon(1e-12));
    }
  }
}

TEST_CASE("package mode: a second derivative (the replay engines)", "[mixed_modes]") {
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
