// Misuse: arithmetic on bool tensors.
#include <fusegrad/fusegrad.hpp>

int main() {
  fg::tensor<bool> a = {true, false};
  auto c = a + a;
  return static_cast<int>(c.shape().rank());
}
