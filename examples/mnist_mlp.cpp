// Seed 004's neural network on Fashion-MNIST: two hidden dense layers of 256 with relu, ten
// logits, sparse softmax cross-entropy from logits and Adam, trained by a custom loop over a
// tf.data-style pipeline (from_tensor_slices, shuffle, batch, prefetch), with Keras' progress
// bar. Prints the test accuracy, writes the loss and accuracy per epoch to
// logs/mnist_mlp_history.csv and draws them to logs/mnist_mlp_history.png with gnuplot (one line
// and no picture when gnuplot is missing).
//
// Usage: mnist_mlp [--full | --test] [--epochs N]
//   (none)  the short run: one epoch over the first 12000 training images;
//   --full  five epochs over all 60000 (docs/benchmarks.md quotes its accuracy);
//   --test  the shortest: one epoch over 3000 images (the test suite's run).
// The data: Debian's dataset-fashion-mnist, or FUSEGRAD_DATASETS (fg::data::fashion_mnist).
#include <fusegrad/data.hpp>  // datasets, Fashion-MNIST
#include <fusegrad/fusegrad.hpp>
#include <fusegrad/nn.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace nn = fg::nn;

// Seed 004's NeuralNet: a plain struct whose layers the model walk finds.
struct neural_net {
  nn::dense layer1{256, {.activation = "relu"}}, layer2{256, {.activation = "relu"}}, out_layer{10};
  fg::tensor<float> operator()(const fg::tensor<float>& x, bool training = false) {
    return out_layer(layer2(layer1(x, training), training), training);
  }
};
BOOST_HANA_ADAPT_STRUCT(neural_net, layer1, layer2, out_layer);

// Images of 28 x 28 values 0..255 as rows of 784 floats in [0, 1].
fg::tensor<float> flat_pixels(const fg::tensor<std::int32_t>& images) {
  const long n = static_cast<long>(images.shape()[0]);
  return fg::reshape(fg::cast<float>(images), {n, 784}) / 255.f;
}

// The first n rows of t.
template <class T>
fg::tensor<T> first_rows(const fg::tensor<T>& t, std::size_t n) {
  std::vector<std::int64_t> idx(std::min(n, t.shape()[0]));
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<std::int64_t>(i);
  return fg::gather(t, fg::tensor<std::int64_t>(fg::shape{idx.size()}, idx), 0);
}

// Draws the history with gnuplot, or says why not.
void plot(const std::filesystem::path& csv, const std::filesystem::path& png) {
  if (std::system("command -v gnuplot > /dev/null 2>&1") != 0) {
    std::printf("gnuplot not found (Debian: gnuplot-nox): no picture; the history is in %s\n", csv.c_str());
    return;
  }
  const std::filesystem::path script = csv.parent_path() / "mnist_mlp_history.gp";
  std::ofstream(script) << "set terminal pngcairo size 800,400\nset output '" << png.string() << "'\n"
                        << "set datafile separator ','\nset key autotitle columnhead\nset xlabel 'epoch'\n"
                        << "set multiplot layout 1,2\nplot '" << csv.string() << "' using 1:2 with linespoints\n"
                        << "plot '" << csv.string() << "' using 1:3 with linespoints\nunset multiplot\n";
  const std::string command = "gnuplot '" + script.string() + "' > /dev/null 2>&1";
  if (std::system(command.c_str()) == 0) std::printf("history drawn to %s\n", png.c_str());
  else std::printf("gnuplot failed: no picture; the history is in %s\n", csv.c_str());
}

int main(int argc, char** argv) {
  std::size_t train_samples = 12000;
  int epochs = 1;
  double want = 0.75;  // the short run's accuracy floor
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--full") train_samples = 60000, epochs = 5, want = 0.86;
    else if (a == "--test") train_samples = 3000, want = 0.65;
    else if (a == "--epochs" && i + 1 < argc) epochs = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: mnist_mlp [--full | --test] [--epochs N]\n");
      return 2;
    }
  }
  fg::data::train_test_split data;
  try {
    data = fg::data::fashion_mnist::load_data();
  } catch (const std::exception& e) {
    std::printf("mnist_mlp: no Fashion-MNIST here (%s); skipped\n", e.what());
    return 77;  // a skipped test
  }
  const auto& [train, test] = data;
  const fg::tensor<float> x_train = flat_pixels(first_rows(train.images, train_samples));
  const fg::tensor<std::int32_t> y_train = first_rows(train.labels, train_samples);
  const fg::tensor<float> x_test = flat_pixels(test.images);

  fg::random::set_seed(1);
  const std::int64_t batch_size = 128;
  const auto dataset =
      fg::data::from_tensor_slices(x_train, y_train).shuffle(10000, 2).batch(batch_size).prefetch(2);

  neural_net net;
  fg::optimizers::adam opt({.learning_rate = 1e-3});
  nn::losses::sparse_categorical_crossentropy loss_fn({.from_logits = true});
  nn::metrics::mean mean_loss;
  nn::metrics::sparse_categorical_accuracy accuracy;

  // Keras' progress bar, driven by the loop as tf.keras.utils.Progbar is.
  nn::callbacks::training_context ctx;
  ctx.epochs = epochs;
  ctx.steps = dataset.cardinality();
  nn::callbacks::progress_logger bar(1, isatty(1) != 0);
  bar.attach(&ctx);

  std::vector<fg::variable<float>> vars;
  std::vector<std::array<double, 2>> history;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    bar.on_epoch_begin(epoch, {});
    mean_loss.reset_state();
    accuracy.reset_state();
    std::int64_t step = 0;
    for (const auto& [x, y] : dataset) {
      fg::gradient_tape tape;
      const fg::tensor<float> logits = net(x, true);
      const fg::tensor<float> loss = loss_fn(y, logits);
      if (vars.empty()) vars = nn::trainable_variables(net);  // made by the first call
      opt.apply_gradients(tape.gradient(loss, vars), vars);
      mean_loss.update_state(loss);
      accuracy.update_state(y, logits);
      bar.on_batch_end(step++, {{"loss", mean_loss.result().item()}, {"accuracy", accuracy.result().item()}});
    }
    history.push_back({mean_loss.result().item(), accuracy.result().item()});
    bar.on_epoch_end(epoch, {{"loss", history.back()[0]}, {"accuracy", history.back()[1]}});
  }

  nn::metrics::sparse_categorical_accuracy test_accuracy;
  test_accuracy.update_state(test.labels, net(x_test));
  const double acc = test_accuracy.result().item();
  std::printf("test accuracy: %.4f (%zu training images, %d epoch%s)\n", acc, x_train.shape()[0], epochs,
              epochs == 1 ? "" : "s");

  const std::filesystem::path logs = "logs", csv = logs / "mnist_mlp_history.csv";
  std::filesystem::create_directories(logs);
  std::ofstream out(csv);
  out << "epoch,loss,accuracy\n";
  for (std::size_t e = 0; e < history.size(); ++e) out << e + 1 << "," << history[e][0] << "," << history[e][1] << "\n";
  out.close();
  std::printf("history written to %s\n", csv.c_str());
  plot(csv, logs / "mnist_mlp_history.png");

  if (acc < want) {
    std::fprintf(stderr, "mnist_mlp: expected a test accuracy of at least %.2f\n", want);
    return 1;
  }
  return 0;
}
