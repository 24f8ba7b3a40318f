// Misuse: fg::where with a float condition instead of a bool tensor.
#include <fusegrad/fusegrad.hpp>

int main() {
  fg::tensor<float> x = {1.f, -1.f};
  auto c = fg::where(x, x, 0.f);
  return static_cast<int>(c.shape().rank());
}
