// Misuse: a logical op on float tensors instead of bool ones.
#include <fusegrad/fusegrad.hpp>

int main() {
  fg::tensor<float> x = {1.f, 0.f};
  auto c = fg::logical_and(x, x);
  return static_cast<int>(c.shape().rank());
}
