// Seed 002's subclassed MNIST model as a plain struct: two dense layers, the second called twice
// (one set of variables), its variables found by Boost.Hana reflection and named by member, and
// a custom training loop with Adam and a loss history on a small synthetic problem.
#include <fusegrad/nn.hpp>

#include <cstdio>
#include <vector>

namespace nn = fg::nn;

struct mnist_model {
  nn::dense dense1{10}, dense2{10};
  fg::tensor<float> operator()(const fg::tensor<float>& x, bool training = false) {
    return dense2(dense2(dense1(x, training), training), training);  // dense2 twice: one set of variables
  }
};
BOOST_HANA_ADAPT_STRUCT(mnist_model, dense1, dense2);

int main() {
  fg::random::set_seed(1);
  mnist_model m;
  const fg::tensor<float> out = m(fg::zeros<float>({1, 1, 784}));
  std::printf("output shape %s\n", out.shape().str().c_str());  // (1, 1, 10)
  for (const auto& v : nn::named_variables(m)) std::printf("  %s %s\n", v.name.c_str(), v.shape().str().c_str());

  // A custom training loop (seed 002): 256 points of 784 features, a label per point that a
  // linear map of the features decides, Adam on the sparse cross-entropy from logits.
  const fg::tensor<float> x = fg::random::normal<float>({256, 784}, 1);
  const fg::tensor<float> w = fg::random::normal<float>({784, 10}, 2);
  const fg::tensor<std::int64_t> y = fg::argmax(fg::matmul(x, w), 1);
  fg::optimizers::adam opt({.learning_rate = 1e-2});
  nn::losses::sparse_categorical_crossentropy loss_fn({.from_logits = true});
  nn::metrics::sparse_categorical_accuracy accuracy;
  const auto vars = nn::trainable_variables(m);
  std::vector<float> history;
  for (int epoch = 0; epoch < 20; ++epoch) {
    fg::gradient_tape tape;
    const fg::tensor<float> logits = m(x, true);
    const fg::tensor<float> loss = loss_fn(y, logits);
    opt.apply_gradients(tape.gradient(loss, vars), vars);
    history.push_back(loss.item());
    accuracy.reset_state();
    accuracy.update_state(y, logits);
    if (epoch % 5 == 4)
      std::printf("epoch %2d: loss %.4f, accuracy %.3f\n", epoch + 1, history.back(), accuracy.result().item());
  }
  const bool ok = out.shape() == fg::shape{1, 1, 10} && vars.size() == 4 && history.back() < 0.25f * history.front() &&
                  accuracy.result().item() > 0.9f;
  if (!ok) std::fprintf(stderr, "mnist_model: expected the loss to fall to a quarter and accuracy above 0.9\n");
  return ok ? 0 : 1;
}
