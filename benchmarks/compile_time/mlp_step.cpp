// Compile-time probe: a hand-written 2-layer MLP training step.
#include <fusegrad/fusegrad.hpp>

#include <iostream>

int main() {
  fg::variable<float> w1(fg::random::normal<float>({784, 64}, /*seed=*/1, 0.f, 0.05f), "w1");
  fg::variable<float> b1(fg::zeros<float>({64}), "b1");
  fg::variable<float> w2(fg::random::normal<float>({64, 10}, /*seed=*/2, 0.f, 0.05f), "w2");
  fg::variable<float> b2(fg::zeros<float>({10}), "b2");
  fg::tensor<float> x = fg::random::uniform<float>({32, 784}, /*seed=*/3, 0.f, 1.f);
  fg::tensor<float> labels = fg::one_hot<float>(fg::tensor<int>({1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 6,
                                                                 7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2}), 10);
  for (int step = 0; step < 3; ++step) {
    fg::gradient_tape tape;
    fg::tensor<float> h = fg::relu(fg::matmul(x, w1) + b1);
    fg::tensor<float> logits = fg::matmul(h, w2) + b2;
    fg::tensor<float> lse = fg::reduce_logsumexp(logits, 1, /*keepdims=*/true);
    fg::tensor<float> loss = -fg::reduce_mean(fg::reduce_sum(labels * (logits - lse), 1));
    auto [g1, gb1, g2, gb2] = tape.gradient(loss, std::tie(w1, b1, w2, b2));
    w1.assign_sub(0.1f * g1);
    b1.assign_sub(0.1f * gb1);
    w2.assign_sub(0.1f * g2);
    b2.assign_sub(0.1f * gb2);
    std::cout << loss.item() << "\n";
  }
  return 0;
}
