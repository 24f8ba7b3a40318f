// The Keras half of fusegrad in one program: seed 002's model as a plain struct (its variables
// found by reflection, one Adam step in a custom loop), then a Sequential CNN trained with
// compile/fit, a validation split and early stopping, and Keras' summary table. The labels are
// random, so the program checks that everything runs and has the shapes and logs Keras gives,
// not that the model learns.
#include <fusegrad/fusegrad.hpp>
#include <fusegrad/nn.hpp>

#include <cmath>
#include <iostream>

namespace nn = fg::nn;

struct mnist_model {  // seed 002: a model is a plain struct
  nn::dense dense1{10}, dense2{10};
  fg::tensor<float> operator()(const fg::tensor<float>& x, bool training = false) {
    return dense2(dense2(dense1(x, training), training), training);  // dense2 twice: one set of variables
  }
};
BOOST_HANA_ADAPT_STRUCT(mnist_model, dense1, dense2);  // BOOST_HANA_DEFINE_STRUCT works too

int main() {
  mnist_model m;
  fg::tensor<float> out = m(fg::zeros<float>({1, 1, 784}));  // prints shape (1, 1, 10)
  std::cout << "output shape " << out.shape() << "\n";
  auto vars = nn::trainable_variables(m);  // dense1/kernel, dense1/bias, dense2/kernel, dense2/bias
  fg::optimizers::adam opt({.learning_rate = 1e-3});
  nn::losses::sparse_categorical_crossentropy loss_fn({.from_logits = true});
  fg::tensor<float> x = fg::random::normal<float>({32, 784}, 1);
  fg::tensor<std::int64_t> y = fg::cast<std::int64_t>(fg::random::uniform<float>({32}, 2) * 10.f);
  fg::gradient_tape tape;
  fg::tensor<float> loss = loss_fn(y, m(x, true));
  opt.apply_gradients(tape.gradient(loss, vars), vars);

  fg::tensor<float> images = fg::random::uniform<float>({256, 28, 28, 1}, 3);
  fg::tensor<std::int64_t> labels = fg::cast<std::int64_t>(fg::random::uniform<float>({256}, 4) * 10.f);
  nn::sequential model{nn::conv2d(16, {3, 3}, {.activation = "relu"}),
                       nn::conv2d(16, {3, 3}, {.activation = "relu"}),
                       nn::global_average_pooling2d(), nn::dense(10)};
  model.compile({.optimizer = fg::optimizers::adam(),
                 .loss = nn::losses::sparse_categorical_crossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  auto history = model.fit(images, labels, {.batch_size = 32, .epochs = 3, .validation_split = 0.1,
                           .callbacks = {nn::callbacks::early_stopping({.monitor = "val_accuracy", .patience = 2})}});
  model.summary();  // Keras' table
  std::cout << history["loss"].back() << "\n";

  const bool ok = out.shape() == fg::shape{1, 1, 10} && vars.size() == 4 && opt.iterations() == 1 &&
                  history["loss"].size() == history.epochs.size() && history.values.count("val_accuracy") == 1 &&
                  std::isfinite(history["loss"].back()) && model.count_params() == 160 + 2320 + 170;
  if (!ok) std::cerr << "keras_quickstart: unexpected shapes, variables or logs\n";
  return ok ? 0 : 1;
}
