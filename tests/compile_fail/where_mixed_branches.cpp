// Misuse: fg::where with branches of different element types.
#include <fusegrad/fusegrad.hpp>

int main() {
  fg::tensor<float> x = {1.f, -1.f};
  fg::tensor<double> y = {1.0, 2.0};
  auto c = fg::where(x > 0, x, y);
  return static_cast<int>(c.shape().rank());
}
