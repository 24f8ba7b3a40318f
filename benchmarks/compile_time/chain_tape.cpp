// Compile-time probe: one chain summed under a tape, and its gradient.
#include <fusegrad/fusegrad.hpp>

#include <iostream>

int main() {
  fg::tensor<float> x = fg::random::uniform<float>({1000}, /*seed=*/1, -2.f, 2.f);
  fg::gradient_tape tape;
  tape.watch(x);
  fg::tensor<float> y = fg::sum(fg::log(1 + fg::exp(x)) * fg::sigmoid(x) + x * x);
  fg::tensor<float> dx = tape.gradient(y, x);
  std::cout << y.item() << " " << dx.data()[0] << "\n";
  return 0;
}
