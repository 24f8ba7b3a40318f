// Misuse: storing a float expression in a tensor<int> without fg::cast.
#include <fusegrad/fusegrad.hpp>

int main() {
  fg::tensor<float> x = {1.f, 2.f};
  fg::tensor<int> y = x * 2;
  return static_cast<int>(y.size());
}
