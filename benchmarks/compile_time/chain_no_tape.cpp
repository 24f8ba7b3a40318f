// Compile-time probe: one fused chain evaluated once, no tape anywhere in the program.
#include <fusegrad/fusegrad.hpp>

#include <iostream>

int main() {
  fg::tensor<float> x = fg::random::uniform<float>({1000}, /*seed=*/1, -2.f, 2.f);
  fg::tensor<float> y = fg::log(1 + fg::exp(x)) * fg::sigmoid(x) + x * x;
  std::cout << y.data()[0] << "\n";
  return 0;
}
