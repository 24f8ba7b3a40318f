// Misuse: a floating-point-only op (exp) on an integer tensor.
#include <fusegrad/fusegrad.hpp>

int main() {
  fg::tensor<int> a = {1, 2};
  auto c = fg::exp(a);
  return static_cast<int>(c.shape().rank());
}
