// Seed 000's third example: a model struct holding its own variables w and b, fitted to random
// targets with SGD through a gradient tape, the loss printed every 10 steps as it falls.
#include <fusegrad/fusegrad.hpp>
#include <fusegrad/nn.hpp>  // layers, models, optimizers, losses, metrics, callbacks

#include <cstdio>
#include <vector>

struct sim_layers {  // class SimLayers(tf.keras.Model)
  fg::variable<float> w{fg::random::normal<float>({6, 1}, 16), "w"};
  fg::variable<float> b{fg::random::normal<float>({10}, 17), "b"};
  // (10, 1) + (10,) broadcasts to (10, 10), as it does in the seed.
  fg::tensor<float> operator()(const fg::tensor<float>& inputs) const {
    return fg::sigmoid(fg::matmul(inputs, w) + b);
  }
};
BOOST_HANA_ADAPT_STRUCT(sim_layers, w, b);  // lets nn::trainable_variables find w and b

int main() {
  fg::tensor<float> x = fg::random::normal<float>({10, 6}, 18);
  const fg::tensor<float> y = fg::random::normal<float>({10}, 19);
  x = x * 2.5f + fg::random::normal<float>({10, 6}, 20);  // noise on x
  std::printf("input x shape: %s\n", x.shape().str().c_str());

  sim_layers model;
  fg::optimizers::sgd optimizer({.learning_rate = 0.01});
  const auto vars = fg::nn::trainable_variables(model);  // w, b
  std::vector<float> printed;
  for (int i = 0; i < 500; ++i) {
    fg::gradient_tape tape;
    const fg::tensor<float> losses = fg::reduce_mean(fg::square(model(x) - y));
    optimizer.apply_gradients(tape.gradient(losses, vars), vars);
    if ((i + 1) % 10 == 0) {
      std::printf("step: %d loss: %.7f\n", i + 1, losses.item());
      printed.push_back(losses.item());
    }
  }
  std::printf("optimizer weights: %s\n", fg::numpy_str(model.w.value()).c_str());
  std::printf("optimizer bias: %s\n", fg::numpy_str(model.b.value()).c_str());

  // Gradient descent with a small step: every printed loss below the one before it, and the
  // last at least 5% below the first.
  bool ok = printed.size() == 50 && printed.back() < 0.95f * printed.front();
  for (std::size_t i = 1; i < printed.size(); ++i) ok = ok && printed[i] < printed[i - 1];
  if (!ok) std::fprintf(stderr, "sim_layers: expected the loss to fall at every print, by 5%% in all\n");
  return ok ? 0 : 1;
}
