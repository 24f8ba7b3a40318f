// Seed 000's CNNModel on Fashion-MNIST: three 3x3 convolutions (64, 128, 128 filters, relu,
// "same" padding, he_normal) each followed by a 2x2 max pool, then flatten, dense 128 relu and
// dense 10 softmax, trained with compile/fit (categorical cross-entropy on one-hot labels, Adam,
// batch 64), a model_checkpoint writing logs/cnn_model.h5 after every epoch and early stopping
// on val_accuracy. As the seed does, it trains on the CPU and, when a GPU is there, on the GPU,
// and prints "cpu training takes time: ..." and "gpu training takes time: ..." (with no GPU it
// says so and prints the CPU line).
//
// Usage: mnist_cnn [--full | --test] [--epochs N] [--gpu-only]
//   (none)      the short run: one epoch over the first 6000 training images;
//   --full      three epochs over all 60000, validated on the 10000 test images (the seed's run;
//               docs/benchmarks.md quotes its accuracy);
//   --test      the shortest: one epoch over 1000 images (the test suite's run);
//   --gpu-only  trains on the GPU alone (with no GPU it says so and skips).
// Built for a GPU as build/cuda/cuda_mnist_cnn (docs/device.md); fit copies each batch to the
// GPU that device_scope names.
// The data: Debian's dataset-fashion-mnist, or FUSEGRAD_DATASETS (fg::data::fashion_mnist).
#include <fusegrad/data.hpp>  // Fashion-MNIST
#include <fusegrad/fusegrad.hpp>
#include <fusegrad/nn.hpp>
#include <fusegrad/train.hpp>  // model_checkpoint

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace nn = fg::nn;

// The seed's CNNModel(), its layers named as the seed names them.
nn::sequential cnn_model() {
  const auto conv = [](std::int64_t filters, const char* name) {
    return nn::conv2d(filters, 3,
                      {.padding = "same", .activation = "relu", .kernel_initializer = "he_normal", .name = name});
  };
  const auto pool = [](const char* name) { return nn::max_pool2d(2, {.strides = 2, .padding = "valid", .name = name}); };
  nn::sequential model{conv(64, "conv1"),  pool("pool1"),
                       conv(128, "conv2"), pool("pool2"),
                       conv(128, "conv3"), pool("pool3"),
                       nn::flatten(),
                       nn::dense(128, {.activation = "relu", .kernel_initializer = "he_normal"}),
                       nn::dense(10, {.activation = "softmax", .kernel_initializer = "he_normal"})};
  model.compile({.optimizer = fg::optimizers::adam(),
                 .loss = nn::losses::categorical_crossentropy(),
                 .metrics = {"accuracy"}});
  return model;
}

// Images of 28 x 28 values 0..255 as (n, 28, 28, 1) floats in [0, 1], the seed's expand_dims.
fg::tensor<float> pixels(const fg::tensor<std::int32_t>& images) {
  return fg::expand_dims(fg::cast<float>(images) / 255.f, -1);
}

// The first n rows of t.
template <class T>
fg::tensor<T> first_rows(const fg::tensor<T>& t, std::size_t n) {
  std::vector<std::int64_t> idx(std::min(n, t.shape()[0]));
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<std::int64_t>(i);
  return fg::gather(t, fg::tensor<std::int64_t>(fg::shape{idx.size()}, idx), 0);
}

struct run_result {
  double seconds, val_accuracy;
};

// The seed's train_cpu() / train_gpu(): a fresh model fitted on device `where`.
run_result train_on(const char* where, const fg::tensor<float>& x, const fg::tensor<float>& y,
                    const fg::tensor<float>& x_val, const fg::tensor<float>& y_val, int epochs) {
  std::printf("train data shape (%zu, %zu, %zu, %zu)\n", x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3]);
  fg::device_scope on(where);
  fg::random::set_seed(1);
  nn::sequential model = cnn_model();
  const auto start = std::chrono::steady_clock::now();
  const nn::history h =
      model.fit(x, y, {.batch_size = 64, .epochs = epochs, .verbose = 1,
                       .callbacks = {fg::train::model_checkpoint("./logs/cnn_model.h5", {.verbose = 1}),
                                     nn::callbacks::early_stopping({.monitor = "val_accuracy", .patience = 2, .mode = "max"})},
                       .validation_data = std::pair{x_val, y_val}});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {seconds, h["val_accuracy"].back()};
}

int main(int argc, char** argv) {
  std::size_t train_samples = 6000, val_samples = 2000;
  int epochs = 1;
  bool gpu_only = false;
  double want = 0.70;  // the short run's accuracy floor
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--full") train_samples = 60000, val_samples = 10000, epochs = 3, want = 0.88;
    else if (a == "--test") train_samples = 1000, val_samples = 500, want = 0.45;
    else if (a == "--epochs" && i + 1 < argc) epochs = std::atoi(argv[++i]);
    else if (a == "--gpu-only") gpu_only = true;
    else {
      std::fprintf(stderr, "usage: mnist_cnn [--full | --test] [--epochs N] [--gpu-only]\n");
      return 2;
    }
  }
  if (gpu_only && fg::num_gpus() == 0) {
    std::printf("mnist_cnn --gpu-only: no GPU here (fg::num_gpus() == 0); skipping\n");
    return 0;
  }
  fg::data::train_test_split data;
  try {
    data = fg::data::fashion_mnist::load_data();
  } catch (const std::exception& e) {
    std::printf("mnist_cnn: no Fashion-MNIST here (%s); skipped\n", e.what());
    return 77;  // a skipped test
  }
  const auto& [train, test] = data;
  // The seed's one-hot labels (tf.one_hot), for categorical cross-entropy.
  const fg::tensor<float> x_train = pixels(first_rows(train.images, train_samples));
  const fg::tensor<float> y_train = fg::one_hot<float>(first_rows(train.labels, train_samples), 10);
  const fg::tensor<float> x_test = pixels(first_rows(test.images, val_samples));
  const fg::tensor<float> y_test = fg::one_hot<float>(first_rows(test.labels, val_samples), 10);
  std::filesystem::create_directories("logs");

  double gpu_accuracy = -1;
  std::optional<double> gpu_time;
  if (fg::num_gpus() > 0) {
    const run_result r = train_on("/gpu:0", x_train, y_train, x_test, y_test, epochs);
    gpu_time = r.seconds, gpu_accuracy = r.val_accuracy;
  }
  std::optional<run_result> cpu;
  if (!gpu_only) cpu = train_on("/cpu:0", x_train, y_train, x_test, y_test, epochs);
  if (gpu_time) std::printf("gpu training takes time:  %.4f\n", *gpu_time);
  else std::printf("no GPU here (fg::num_gpus() == 0): CPU training only\n");
  if (cpu) std::printf("cpu training takes time:  %.4f\n", cpu->seconds);
  const double accuracy = cpu ? cpu->val_accuracy : gpu_accuracy;
  std::printf("validation accuracy%s: %.4f (%zu training images, %d epoch%s)\n", cpu ? "" : " on the GPU", accuracy,
              x_train.shape()[0], epochs, epochs == 1 ? "" : "s");
  if (gpu_time && cpu) std::printf("validation accuracy on the GPU: %.4f\n", gpu_accuracy);

  if (!std::filesystem::exists("logs/cnn_model.h5")) {
    std::fprintf(stderr, "mnist_cnn: logs/cnn_model.h5 was not written\n");
    return 1;
  }
  if (accuracy < want || (gpu_time && gpu_accuracy < want)) {
    std::fprintf(stderr, "mnist_cnn: expected a validation accuracy of at least %.2f\n", want);
    return 1;
  }
  return 0;
}
