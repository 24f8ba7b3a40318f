// Eager training by hand: fit W and B of y = W x + B to noisy points around y = 3x + 2 with a
// gradient tape and plain gradient descent (the guide's "Variables and optimizers" model).
#include <fusegrad/fusegrad.hpp>

#include <cmath>
#include <cstdio>

int main() {
  // A toy data set of points around 3 x + 2, reproducible through fixed seeds.
  const std::size_t num_examples = 2000;
  const fg::tensor<float> inputs = fg::random::normal<float>({num_examples}, 1);
  const fg::tensor<float> noise = fg::random::normal<float>({num_examples}, 2);
  const fg::tensor<float> outputs = inputs * 3 + 2 + noise;

  fg::variable<float> W(5.0f, "weight"), B(10.0f, "bias");
  auto loss = [&] { return fg::tensor<float>(fg::reduce_mean(fg::square(inputs * W + B - outputs))); };

  const float learning_rate = 0.01f;
  std::printf("Initial loss: %.3f\n", loss().item());
  for (int i = 0; i < 300; ++i) {
    fg::gradient_tape tape;  // records the reads of W and B
    const fg::tensor<float> loss_value = loss();
    auto [dW, dB] = tape.gradient(loss_value, std::tie(W, B));
    W.assign_sub(learning_rate * dW);
    B.assign_sub(learning_rate * dB);
    if (i % 20 == 0) std::printf("Loss at step %03d: %.3f\n", i, loss().item());
  }
  const float final_loss = loss().item();
  std::printf("Final loss: %.3f\n", final_loss);
  std::printf("W = %.4f, B = %.4f\n", W.value().item(), B.value().item());

  // The fit approaches the line the data came from, and the loss the noise's variance (1).
  const bool ok = std::fabs(W.value().item() - 3) < 0.1f && std::fabs(B.value().item() - 2) < 0.1f &&
                  final_loss < 1.1f;
  if (!ok) std::fprintf(stderr, "fit_line: expected W near 3, B near 2 and a final loss below 1.1\n");
  return ok ? 0 : 1;
}
