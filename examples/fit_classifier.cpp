// Keras' compile and fit on a problem small enough to see whole: two Gaussian blobs in the plane,
// one per class, told apart by a sequential of two dense layers. Fit holds out the last 20% of
// the samples for validation and stops early once the validation loss stops falling; the
// program prints the history and checks the accuracy on the held-out samples and on fresh ones.
#include <fusegrad/fusegrad.hpp>
#include <fusegrad/nn.hpp>  // layers, models, optimizers, losses, metrics, callbacks

#include <cstdio>
#include <memory>
#include <vector>

namespace nn = fg::nn;

// n points, the even ones of class 0 around (-2, -2), the odd ones of class 1 around (2, 2),
// each with unit normal noise; the labels as a column of 0s and 1s.
std::pair<fg::tensor<float>, fg::tensor<float>> blobs(std::size_t n, std::uint64_t seed) {
  std::vector<float> labels(n);
  for (std::size_t i = 0; i < n; ++i) labels[i] = static_cast<float>(i % 2);
  const fg::tensor<float> y(fg::shape{n, 1}, labels);
  const fg::tensor<float> x = fg::random::normal<float>({n, 2}, seed) + (2 * y - 1) * 2.0f;  // (n, 2) + (n, 1)
  return {x, y};
}

int main() {
  fg::random::set_seed(7);  // the layers' initial kernels
  const auto [x, y] = blobs(500, 1);

  nn::sequential model{nn::dense(8, {.activation = "relu"}), nn::dense(1, {.activation = "sigmoid"})};
  model.compile({.optimizer = fg::optimizers::adam({.learning_rate = 0.01}),
                 .loss = nn::losses::binary_crossentropy(),
                 .metrics = {"accuracy"}});
  // A shared callback, to ask it afterwards where it stopped.
  auto stop = std::make_shared<nn::callbacks::early_stopping>(
      nn::callbacks::early_stopping_options{.monitor = "val_loss", .min_delta = 1e-3, .patience = 3});
  const nn::history history =
      model.fit(x, y, {.batch_size = 32, .epochs = 100, .verbose = 0, .validation_split = 0.2, .callbacks = {stop}});

  for (std::size_t i = 0; i < history.epochs.size(); ++i)
    std::printf("epoch %2d: loss %.4f - accuracy %.4f - val_loss %.4f - val_accuracy %.4f\n", history.epochs[i] + 1,
                history["loss"][i], history["accuracy"][i], history["val_loss"][i], history["val_accuracy"][i]);
  std::printf("early stopping after epoch %d (best: epoch %d)\n", stop->stopped_epoch() + 1, stop->best_epoch() + 1);

  const auto [x_test, y_test] = blobs(200, 2);  // fresh points from the same blobs
  const nn::logs test = model.evaluate(x_test, y_test);
  std::printf("test: loss %.4f - accuracy %.4f\n", test.at("loss"), test.at("accuracy"));

  // The blobs' centres are 5.7 standard deviations apart: the best boundary, x0 + x1 = 0,
  // misclassifies about 0.2% of the points.
  const bool ok = history["val_accuracy"].back() >= 0.95 && test.at("accuracy") >= 0.95 && stop->stopped_epoch() >= 0;
  if (!ok) std::fprintf(stderr, "fit_classifier: expected early stopping and at least 95%% accuracy\n");
  return ok ? 0 : 1;
}
