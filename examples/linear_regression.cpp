// Seed 001's linear regression: batches of synthetic data from known weights [[-2], [4], [1]]
// and bias 0.5, a model holding one dense layer, and mini-batch gradient descent that recovers
// them.
#include <fusegrad/fusegrad.hpp>
#include <fusegrad/nn.hpp>  // layers, models, optimizers, losses, metrics, callbacks

#include <cmath>
#include <cstdio>

namespace nn = fg::nn;

// One batch of y = x . w + b + noise, x of shape (batch_size, features). The seed maps a
// tf.data.Dataset.range(num_batches) through this function; fusegrad has no data sets yet, so
// the training loop calls it for each batch with the batch's number as its seed.
std::pair<fg::tensor<float>, fg::tensor<float>> synthetic_batch(const fg::tensor<float>& w, const fg::tensor<float>& b,
                                                                 float noise_level, std::size_t batch_size,
                                                                 std::uint64_t seed) {
  const fg::tensor<float> x = fg::random::normal<float>({batch_size, w.shape()[0]}, 2 * seed);
  const fg::tensor<float> y = fg::matmul(x, w) + b + noise_level * fg::random::normal<float>(fg::shape{}, 2 * seed + 1);
  return {x, y};
}

struct linear_model {  // class LinearModel(tf.keras.Model)
  nn::dense hidden_layer{1};
  // The mean squared error of the model's predictions for xs against ys.
  fg::tensor<float> operator()(const fg::tensor<float>& xs, const fg::tensor<float>& ys) {
    return fg::reduce_mean(fg::square(hidden_layer(xs) - ys));
  }
};
BOOST_HANA_ADAPT_STRUCT(linear_model, hidden_layer);

int main() {
  const fg::tensor<float> true_w = {{-2.0f}, {4.0f}, {1.0f}};
  const fg::tensor<float> true_b = {0.5f};
  const float noise_level = 0.01f;
  const std::size_t batch_size = 64, num_batches = 20;
  const double learning_rate = 0.1;
  std::printf("True w: %s\nTrue b: %s\n\n", fg::numpy_str(true_w).c_str(), fg::numpy_str(true_b).c_str());

  fg::random::set_seed(1);  // the dense layer's initial kernel
  linear_model model;
  // The loss and its gradients with respect to every variable it reads, as (gradient, variable)
  // pairs: the seed's tfe.implicit_value_and_gradients.
  auto loss_and_grads = fg::implicit_value_and_gradients(
      [&](const fg::tensor<float>& xs, const fg::tensor<float>& ys) { return model(xs, ys); });
  fg::optimizers::sgd optimizer({.learning_rate = learning_rate});  // plain gradient descent
  for (std::size_t i = 0; i < num_batches; ++i) {
    const auto [xs, ys] = synthetic_batch(true_w, true_b, noise_level, batch_size, i);
    const auto [loss, grads] = loss_and_grads(xs, ys);
    std::printf("Iteration %zu: loss = %s\n", i, fg::numpy_str(loss).c_str());
    optimizer.apply_gradients(grads);
  }
  const auto vars = nn::trainable_variables(model);  // hidden_layer/kernel, hidden_layer/bias
  const fg::tensor<float> w = vars[0].value(), b = vars[1].value();
  std::printf("\nAfter training: w=%s\n", fg::numpy_str(w).c_str());
  std::printf("\nAfter training: b=%s\n", fg::numpy_str(b).c_str());

  const bool ok =
      fg::reduce_max(fg::abs(w - true_w)).item() < 0.1f && fg::reduce_max(fg::abs(b - true_b)).item() < 0.1f;
  if (!ok) std::fprintf(stderr, "linear_regression: expected w within 0.1 of [[-2], [4], [1]] and b of 0.5\n");
  return ok ? 0 : 1;
}
