// Compile-time probe: five small chains under one persistent tape, gradients for two sources.
#include <fusegrad/fusegrad.hpp>

#include <iostream>

int main() {
  fg::tensor<float> a = fg::random::normal<float>({64}, /*seed=*/1);
  fg::tensor<float> b = fg::random::normal<float>({64}, /*seed=*/2);
  fg::gradient_tape tape({.persistent = true});
  tape.watch(a);
  tape.watch(b);
  fg::tensor<float> c = fg::tanh(a) * b + 1;
  fg::tensor<float> d = fg::exp(-c * c) / (1 + a * a);
  fg::tensor<float> e = fg::sqrt(fg::square(b) + 1) - fg::sigmoid(d);
  fg::tensor<float> f = fg::maximum(e, c) * fg::log1p(fg::abs(a));
  fg::tensor<float> loss = fg::sum(f * f + fg::sin(d) * e);
  fg::tensor<float> da = tape.gradient(loss, a);
  fg::tensor<float> db = tape.gradient(loss, b);
  std::cout << loss.item() << " " << da.data()[0] << " " << db.data()[0] << "\n";
  return 0;
}
