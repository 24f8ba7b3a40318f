// The second package-mode unit of tests/mixed_modes: it makes a tape too, and compiles no engines.
#include <fusegrad/fusegrad.hpp>

double softplus_gradient(double x0) {
  fg::tensor<double> x = x0;
  fg::gradient_tape tape;
  tape.watch(x);
  fg::tensor<double> y = fg::log(1.0 + fg::exp(x));
  return tape.gradient(y, x).item();
}
