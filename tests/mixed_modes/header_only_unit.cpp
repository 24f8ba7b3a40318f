// The header-only unit of tests/mixed_modes (Note [package mode]): built without
// FUSEGRAD_SEPARATE_ENGINES, so it compiles the engines inline, in a program whose other units
// are in package mode and link libfusegrad.
#include <fusegrad/fusegrad.hpp>

#if defined(FUSEGRAD_SEPARATE_ENGINES)
#error "this unit is built header-only"
#endif

// The gradient of x^3 at x, from a tape made here.
double cube_gradient(double x0) {
  fg::tensor<double> x = x0;
  fg::gradient_tape tape;
  tape.watch(x);
  fg::tensor<double> y = x * x * x;
  return tape.gradient(y, x).item();
}

// Records sin(x) * x on whatever tape is live (one made in another unit).
fg::tensor<double> recorded_here(const fg::tensor<double>& x) { return fg::sin(x) * x; }

// Takes the gradient of y with respect to x on a tape made in another unit.
fg::tensor<double> gradient_here(fg::gradient_tape& tape, const fg::tensor<double>& y, const fg::tensor<double>& x) {
  return tape.gradient(y, x);
}
