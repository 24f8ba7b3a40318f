// Misuse: a floating-point C++ scalar with an integer tensor.
#include <fusegrad/fusegrad.hpp>

int main() {
  fg::tensor<int> a = {1, 2};
  auto c = a + 2.5;
  return static_cast<int>(c.shape().rank());
}
