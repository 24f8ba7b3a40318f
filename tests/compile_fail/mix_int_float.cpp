// Misuse: adding tensors of different element types (TensorFlow raises; convert with fg::cast).
#include <fusegrad/fusegrad.hpp>

int main() {
  fg::tensor<int> a = {1, 2};
  fg::tensor<float> b = {1.f, 2.f};
  auto c = a + b;
  return static_cast<int>(c.shape().rank());
}
