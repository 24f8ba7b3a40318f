// Variables and optimizers (seed 002): a model struct holding W and B of y = W x + B, fitted to
// noisy points around y = 3x + 2 by an SGD optimizer object, and the same steps written out by
// hand with assign_sub, which end at the same W and B.
#include <fusegrad/fusegrad.hpp>
#include <fusegrad/nn.hpp>  // layers, models, optimizers, losses, metrics, callbacks

#include <cmath>
#include <cstdio>
#include <vector>

struct line_model {  // class Model(tf.keras.Model)
  fg::variable<float> W{5.0f, "weight"}, B{10.0f, "bias"};
  fg::tensor<float> operator()(const fg::tensor<float>& inputs) const { return inputs * W + B; }
};
BOOST_HANA_ADAPT_STRUCT(line_model, W, B);  // lets nn::trainable_variables find W and B

// The loss function to be optimized, and its gradients with respect to the model's variables.
fg::tensor<float> loss(const line_model& model, const fg::tensor<float>& inputs, const fg::tensor<float>& targets) {
  return fg::reduce_mean(fg::square(model(inputs) - targets));
}
std::vector<fg::tensor<float>> grad(const line_model& model, const fg::tensor<float>& inputs,
                                    const fg::tensor<float>& targets) {
  fg::gradient_tape tape;  // records the reads of W and B
  const fg::tensor<float> loss_value = loss(model, inputs, targets);
  return tape.gradient(loss_value, fg::nn::trainable_variables(model));
}

int main() {
  // A toy data set of points around 3 x + 2, reproducible through fixed seeds.
  const std::size_t num_examples = 2000;
  const fg::tensor<float> training_inputs = fg::random::normal<float>({num_examples}, 1);
  const fg::tensor<float> noise = fg::random::normal<float>({num_examples}, 2);
  const fg::tensor<float> training_outputs = training_inputs * 3 + 2 + noise;

  line_model model;
  fg::optimizers::sgd optimizer({.learning_rate = 0.01});
  const auto vars = fg::nn::trainable_variables(model);  // W, B
  std::printf("Initial loss: %.3f\n", loss(model, training_inputs, training_outputs).item());
  for (int i = 0; i < 300; ++i) {
    optimizer.apply_gradients(grad(model, training_inputs, training_outputs), vars);
    if (i % 20 == 0) std::printf("Loss at step %03d: %.3f\n", i, loss(model, training_inputs, training_outputs).item());
  }
  const float final_loss = loss(model, training_inputs, training_outputs).item();
  std::printf("Final loss: %.3f\n", final_loss);
  std::printf("W = %.4f, B = %.4f\n", model.W.value().item(), model.B.value().item());

  // The same 300 steps by hand: each variable moved against its gradient with assign_sub.
  line_model by_hand;
  const float learning_rate = 0.01f;
  for (int i = 0; i < 300; ++i) {
    fg::gradient_tape tape;
    const fg::tensor<float> loss_value = loss(by_hand, training_inputs, training_outputs);
    auto [dW, dB] = tape.gradient(loss_value, std::tie(by_hand.W, by_hand.B));
    by_hand.W.assign_sub(learning_rate * dW);
    by_hand.B.assign_sub(learning_rate * dB);
  }
  std::printf("by hand: W = %.4f, B = %.4f\n", by_hand.W.value().item(), by_hand.B.value().item());

  // The fit approaches the line the data came from, and the loss the noise's variance (1); the
  // optimizer's steps are plain gradient descent, so the hand-written loop ends at the same place.
  const float W = model.W.value().item(), B = model.B.value().item();
  const bool ok = std::fabs(W - 3) < 0.1f && std::fabs(B - 2) < 0.1f && final_loss < 1.1f &&
                  std::fabs(by_hand.W.value().item() - W) < 1e-4f && std::fabs(by_hand.B.value().item() - B) < 1e-4f;
  if (!ok)
    std::fprintf(stderr, "fit_line: expected W near 3, B near 2, a final loss below 1.1, and the same by hand\n");
  return ok ? 0 : 1;
}
