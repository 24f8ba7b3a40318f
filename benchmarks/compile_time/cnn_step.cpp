// Compile-time probe: a hand-written CNN training step (conv2d, relu, max_pool2d, a dense layer,
// the sparse softmax cross-entropy), beside mlp_step.cpp's matmul-only step.
#include <fusegrad/nn.hpp>

#include <iostream>

int main() {
  fg::variable<float> w1(fg::random::normal<float>({3, 3, 1, 16}, /*seed=*/1, 0.f, 0.1f), "w1");
  fg::variable<float> b1(fg::zeros<float>({16}), "b1");
  fg::variable<float> w2(fg::random::normal<float>({14 * 14 * 16, 10}, /*seed=*/2, 0.f, 0.05f), "w2");
  fg::variable<float> b2(fg::zeros<float>({10}), "b2");
  fg::tensor<float> x = fg::random::uniform<float>({32, 28, 28, 1}, /*seed=*/3, 0.f, 1.f);
  fg::tensor<int> labels = {1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2};
  for (int step = 0; step < 3; ++step) {
    fg::gradient_tape tape;
    fg::tensor<float> h = fg::max_pool2d(fg::relu(fg::bias_add(fg::conv2d(x, w1, 1, "SAME"), b1)), 2, 2, "VALID");
    fg::tensor<float> logits = fg::matmul(fg::reshape(h, {32, 14 * 14 * 16}), w2) + b2;
    fg::tensor<float> loss = fg::reduce_mean(fg::sparse_softmax_cross_entropy_with_logits(labels, logits));
    auto [g1, gb1, g2, gb2] = tape.gradient(loss, std::tie(w1, b1, w2, b2));
    w1.assign_sub(0.1f * g1);
    b1.assign_sub(0.1f * gb1);
    w2.assign_sub(0.1f * g2);
    b2.assign_sub(0.1f * gb2);
    std::cout << loss.item() << "\n";
  }
  return 0;
}
