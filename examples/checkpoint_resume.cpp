// Training that stops and resumes from a checkpoint gives the same losses, bit for bit, as
// training that never stopped. A small MLP (784-64-10, Adam) trains on Fashion-MNIST batches:
//   1. an uninterrupted run of 2N steps, its losses kept;
//   2. a run of N steps that saves a checkpoint (the model, the optimizer with its slots and step,
//      a step counter) through a checkpoint_manager every 10 steps, then stops: every object of
//      the run is destroyed, as when a process ends;
//   3. a fresh model, optimizer and pipeline restored from latest_checkpoint(dir), which
//      continue from the saved step to 2N.
// It prints both runs' losses side by side and fails when any differs. The pipeline's order
// depends on the step alone (a fixed shuffle seed, repeat(), then skip(step) on resuming), so a
// resumed run sees the batches the uninterrupted one saw.
//
// Usage: checkpoint_resume [--steps N] [--dir DIR]   (N = 30, DIR = logs/checkpoint_resume)
// The data: Debian's dataset-fashion-mnist, or FUSEGRAD_DATASETS (fg::data::fashion_mnist).
#include <fusegrad/data.hpp>
#include <fusegrad/fusegrad.hpp>
#include <fusegrad/nn.hpp>
#include <fusegrad/train.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace nn = fg::nn;

struct classifier {
  nn::dense hidden{64, {.activation = "relu"}}, out{10};
  fg::tensor<float> operator()(const fg::tensor<float>& x, bool training = false) {
    return out(hidden(x, training), training);
  }
};
BOOST_HANA_ADAPT_STRUCT(classifier, hidden, out);

using batches = fg::data::dataset<std::tuple<fg::tensor<float>, fg::tensor<std::int32_t>>>;

// One run's state: what a checkpoint tracks.
struct trainer {
  classifier model;
  fg::optimizers::adam opt{{.learning_rate = 1e-3}};
  fg::variable<std::int64_t> step{std::int64_t{0}, "step", false};
  nn::losses::sparse_categorical_crossentropy loss_fn{{.from_logits = true}};

  // Makes the model's variables (as a first call does), so that there is something to restore.
  void build(const fg::tensor<float>& x) { model(x); }

  // Trains from the current step up to `until`, on the pipeline's batches from that step on;
  // `every` > 0 calls save() after each `every`-th step.
  template <class Save>
  std::vector<float> train(const batches& data, std::int64_t until, std::int64_t every, Save save) {
    std::vector<float> losses;
    std::vector<fg::variable<float>> vars;
    for (const auto& [x, y] : data.skip(step.value().item()).take(until - step.value().item())) {
      fg::gradient_tape tape;
      const fg::tensor<float> loss = loss_fn(y, model(x, true));
      if (vars.empty()) vars = nn::trainable_variables(model);
      opt.apply_gradients(tape.gradient(loss, vars), vars);
      step.assign_add(1);
      losses.push_back(loss.item());
      if (every > 0 && step.value().item() % every == 0) save();
    }
    return losses;
  }
};

int main(int argc, char** argv) {
  std::int64_t steps = 30;
  std::string dir = "logs/checkpoint_resume";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--steps" && i + 1 < argc) steps = std::atoll(argv[++i]);
    else if (a == "--dir" && i + 1 < argc) dir = argv[++i];
    else {
      std::fprintf(stderr, "usage: checkpoint_resume [--steps N] [--dir DIR]\n");
      return 2;
    }
  }
  fg::data::train_test_split data;
  try {
    data = fg::data::fashion_mnist::load_data();
  } catch (const std::exception& e) {
    std::printf("checkpoint_resume: no Fashion-MNIST here (%s); skipped\n", e.what());
    return 77;  // a skipped test
  }
  const std::int64_t n = 4096;
  std::vector<std::int64_t> first(n);
  for (std::int64_t i = 0; i < n; ++i) first[static_cast<std::size_t>(i)] = i;
  const fg::tensor<std::int64_t> rows(fg::shape{static_cast<std::size_t>(n)}, first);
  const fg::tensor<float> x = fg::reshape(fg::cast<float>(fg::gather(data.train.images, rows, 0)), {n, 784}) / 255.f;
  const fg::tensor<std::int32_t> y = fg::gather(data.train.labels, rows, 0);
  // Each run makes its pipeline afresh, as a new process would: a fixed seed gives every run the
  // same order (a shuffled dataset's order advances each time it is iterated, as tf.data's does).
  const auto pipeline = [&] { return batches(fg::data::from_tensor_slices(x, y).shuffle(1024, 7).batch(64).repeat()); };

  fg::random::set_seed(3);
  std::vector<float> uninterrupted, resumed;
  {
    trainer t;
    uninterrupted = t.train(pipeline(), 2 * steps, 0, [] {});
  }
  std::filesystem::remove_all(dir);
  fg::random::set_seed(3);  // the same initial weights
  {
    trainer t;
    t.build(x);
    fg::train::checkpoint ckpt{{"model", t.model}, {"optimizer", t.opt}, {"step", t.step}};
    fg::train::checkpoint_manager manager(ckpt, dir, 3);
    resumed = t.train(pipeline(), steps, 10, [&] { std::printf("saved %s\n", manager.save().c_str()); });
  }  // the run stops: its model, optimizer and pipeline position are gone
  {
    fg::random::set_seed(99);  // other initial weights, all overwritten by the restore
    trainer t;
    t.build(x);
    fg::train::checkpoint ckpt{{"model", t.model}, {"optimizer", t.opt}, {"step", t.step}};
    const std::optional<std::string> latest = fg::train::latest_checkpoint(dir);
    if (!latest) {
      std::fprintf(stderr, "checkpoint_resume: no checkpoint in %s\n", dir.c_str());
      return 1;
    }
    ckpt.restore(*latest);
    std::printf("restored %s: step %lld, optimizer iterations %lld\n", latest->c_str(),
                static_cast<long long>(t.step.value().item()), static_cast<long long>(t.opt.iterations()));
    resumed.resize(static_cast<std::size_t>(t.step.value().item()));  // steps after the last save are redone
    const std::vector<float> rest = t.train(pipeline(), 2 * steps, 0, [] {});
    resumed.insert(resumed.end(), rest.begin(), rest.end());
  }

  std::printf("step  uninterrupted  resumed\n");
  int differ = 0;
  for (std::size_t i = 0; i < uninterrupted.size(); ++i) {
    const bool same = i < resumed.size() && resumed[i] == uninterrupted[i];
    differ += !same;
    if (i % 5 == 4 || !same)
      std::printf("%4zu  %.9f    %.9f%s\n", i + 1, uninterrupted[i], i < resumed.size() ? resumed[i] : 0.f,
                  same ? "" : "  differs");
  }
  if (differ != 0 || resumed.size() != uninterrupted.size()) {
    std::fprintf(stderr, "checkpoint_resume: %d of %zu losses differ\n", differ, uninterrupted.size());
    return 1;
  }
  std::printf("all %zu losses are the same, bit for bit\n", uninterrupted.size());
  return 0;
}
