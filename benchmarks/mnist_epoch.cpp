// The MNIST programs' costs on Fashion-MNIST, in wall time (docs/benchmarks.md, "Training on
// real data"):
//   mlp         one epoch of examples/mnist_mlp.cpp's loop (784-256-256-10, Adam, batch 128, a
//               pipeline of from_tensor_slices, shuffle, batch and prefetch), after a warm-up of
//               20 batches;
//   cnn         one epoch of examples/mnist_cnn.cpp's fit (seed 000's CNNModel, Adam, batch 64,
//               no validation, verbose 0), after a warm-up fit of 20 batches;
//   pipeline    the training set through shuffle(10000), batch(128) and prefetch(2) with an
//               empty step, against the MLP's step rate measured on the same batches;
//   checkpoint  saving and restoring the CNN's variables with Adam's slots through
//               fg::train::checkpoint, and the file's size against the variables' raw bytes.
// Usage: mnist_epoch mlp|cnn|pipeline|checkpoint [--threads N] [--dir DIR]
// The peers: benchmarks/mnist_peers.py epoch mlp|cnn --threads N.
#include <fusegrad/data.hpp>
#include <fusegrad/fusegrad.hpp>
#include <fusegrad/nn.hpp>
#include <fusegrad/train.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace nn = fg::nn;
using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// examples/mnist_mlp.cpp's network.
struct neural_net {
  nn::dense layer1{256, {.activation = "relu"}}, layer2{256, {.activation = "relu"}}, out_layer{10};
  fg::tensor<float> operator()(const fg::tensor<float>& x, bool training = false) {
    return out_layer(layer2(layer1(x, training), training), training);
  }
};
BOOST_HANA_ADAPT_STRUCT(neural_net, layer1, layer2, out_layer);

// examples/mnist_cnn.cpp's model.
nn::sequential cnn_model() {
  const auto conv = [](std::int64_t filters) {
    return nn::conv2d(filters, 3, {.padding = "same", .activation = "relu", .kernel_initializer = "he_normal"});
  };
  nn::sequential model{conv(64), nn::max_pool2d(2), conv(128), nn::max_pool2d(2), conv(128), nn::max_pool2d(2),
                       nn::flatten(), nn::dense(128, {.activation = "relu", .kernel_initializer = "he_normal"}),
                       nn::dense(10, {.activation = "softmax", .kernel_initializer = "he_normal"})};
  model.compile({.optimizer = fg::optimizers::adam(), .loss = nn::losses::categorical_crossentropy()});
  return model;
}

struct mlp_trainer {
  neural_net net;
  fg::optimizers::adam opt{{.learning_rate = 1e-3}};
  nn::losses::sparse_categorical_crossentropy loss_fn{{.from_logits = true}};
  std::vector<fg::variable<float>> vars;
  void step(const fg::tensor<float>& x, const fg::tensor<std::int32_t>& y) {
    fg::gradient_tape tape;
    const fg::tensor<float> loss = loss_fn(y, net(x, true));
    if (vars.empty()) vars = nn::trainable_variables(net);
    opt.apply_gradients(tape.gradient(loss, vars), vars);
  }
};

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: mnist_epoch mlp|cnn|pipeline|checkpoint [--threads N] [--dir DIR]\n");
    return 2;
  }
  const std::string what = argv[1];
  int threads = 1;
  std::string dir;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--threads") threads = std::atoi(argv[i + 1]);
    else if (a == "--dir") dir = argv[i + 1];
  }
  fg::config::set_intra_op_parallelism_threads(threads);
  const auto [train, test] = dir.empty() ? fg::data::fashion_mnist::load_data() : fg::data::fashion_mnist::load_data(dir);
  const long n = static_cast<long>(train.images.shape()[0]);
  const fg::tensor<float> images = fg::cast<float>(train.images) / 255.f;
  const fg::tensor<float> flat = fg::reshape(images, {n, 784});
  const auto mlp_pipeline = [&] { return fg::data::from_tensor_slices(flat, train.labels).shuffle(10000, 2).batch(128).prefetch(2); };

  if (what == "mlp") {
    mlp_trainer t;
    for (const auto& [x, y] : mlp_pipeline().take(20)) t.step(x, y);
    const auto t0 = clock_type::now();
    std::int64_t steps = 0;
    for (const auto& [x, y] : mlp_pipeline()) t.step(x, y), ++steps;
    std::printf("fusegrad, mlp, %d thread(s): one epoch %.2f s (%lld steps)\n", threads, seconds_since(t0),
                static_cast<long long>(steps));
  } else if (what == "cnn") {
    const fg::tensor<float> x = fg::expand_dims(images, -1);
    const fg::tensor<float> y = fg::one_hot<float>(train.labels, 10);
    nn::sequential model = cnn_model();
    model.fit(x(fg::slice(0, 20 * 64)), y(fg::slice(0, 20 * 64)),
              {.batch_size = 64, .verbose = 0});
    const auto t0 = clock_type::now();
    model.fit(x, y, {.batch_size = 64, .verbose = 0});
    std::printf("fusegrad, cnn, %d thread(s): one epoch %.2f s\n", threads, seconds_since(t0));
  } else if (what == "pipeline") {
    std::int64_t batches = 0;
    auto t0 = clock_type::now();
    for (const auto& [x, y] : mlp_pipeline()) batches += x.shape()[0] > 0;
    const double empty = seconds_since(t0) / static_cast<double>(batches);
    mlp_trainer t;
    std::int64_t steps = 0;
    for (const auto& [x, y] : mlp_pipeline().take(20)) t.step(x, y);
    t0 = clock_type::now();
    for (const auto& [x, y] : mlp_pipeline().take(100)) t.step(x, y), ++steps;
    const double step = seconds_since(t0) / static_cast<double>(steps);
    std::printf("pipeline, %d thread(s): %.1f us a batch with an empty step (%lld batches), the MLP's step %.1f us "
                "(%.1fx the pipeline's time)\n",
                threads, empty * 1e6, static_cast<long long>(batches), step * 1e6, step / empty);
  } else if (what == "checkpoint") {
    nn::sequential model = cnn_model();
    fg::optimizers::adam opt;
    const fg::tensor<float> x = fg::expand_dims(images(fg::slice(0, 64)), -1);
    const fg::tensor<float> y = fg::one_hot<float>(train.labels(fg::slice(0, 64)), 10);
    {  // one step, so that Adam has made its slots
      std::vector<fg::variable<float>> vars;
      fg::gradient_tape tape;
      const fg::tensor<float> loss = nn::losses::categorical_crossentropy()(y, model(x, true));
      vars = nn::trainable_variables(model);
      opt.apply_gradients(tape.gradient(loss, vars), vars);
    }
    std::size_t raw = 0;
    for (const auto& v : nn::trainable_variables(model)) raw += v.value().size() * sizeof(float) * 3;  // value, m, v
    const std::filesystem::path d = std::filesystem::temp_directory_path() / "fusegrad_mnist_epoch_ckpt";
    std::filesystem::remove_all(d);
    fg::train::checkpoint ckpt{{"model", model}, {"optimizer", opt}};
    double save = 1e9, restore = 1e9;
    std::string path;
    for (int r = 0; r < 5; ++r) {
      auto t0 = clock_type::now();
      path = ckpt.save((d / "ckpt").string());
      save = std::min(save, seconds_since(t0));
      t0 = clock_type::now();
      ckpt.restore(path);
      restore = std::min(restore, seconds_since(t0));
    }
    const auto size = std::filesystem::file_size(path + ".h5");
    std::printf("checkpoint of the CNN with Adam's slots: save %.2f ms, restore %.2f ms (best of 5); file %.2f MB, "
                "raw values %.2f MB (%.3fx)\n",
                save * 1e3, restore * 1e3, static_cast<double>(size) / 1e6, static_cast<double>(raw) / 1e6,
                static_cast<double>(size) / static_cast<double>(raw));
    std::filesystem::remove_all(d);
  } else {
    std::fprintf(stderr, "mnist_epoch: unknown case '%s' (mlp, cnn, pipeline or checkpoint)\n", what.c_str());
    return 2;
  }
  return 0;
}
