// One training step of a 784-256-256-10 MLP (batch 128, float32, relu hidden layers, sparse
// softmax cross-entropy from logits, mean over the batch), on the same fixed data in every case:
//   gemms           the step's eight dnnl_sgemm calls alone (oneDNN's sgemm, which fusegrad's
//                   float32 matmul calls), on buffers allocated once: the floor;
//   gemms_openblas  the same eight products through OpenBLAS's cblas_sgemm;
//                   (forward x.W1, h1.W2, h2.W3; backward h2'.d3, d3.W3', h1'.d2, d2.W2', x'.d1);
//   hand            the same calls with hand-written loops for the bias, relu, the loss and its
//                   gradient, relu's backward, the bias gradients and the SGD update, in place;
//   hand_adam       the same with Adam's update in place instead of SGD's, a one-pass loop
//                   vectorised with fast math (chain_ceiling.cpp's adam_ceiling);
//   sequential_sgd  nn::sequential{dense(256, relu), dense(256, relu), dense(10)} under a
//                   gradient tape, nn::losses::sparse_categorical_crossentropy from logits and
//                   fg::optimizers::sgd's apply_gradients, as a user writes the step;
//   sequential_adam the same with fg::optimizers::adam;
//   fit_step        model.fit's cost per step: one epoch of 16 batches of 128, divided by 16.
// The sequential cases first check one step against the hand-written gradients and stop
// (SkipWithError) if they differ. Times are wall-clock (oneDNN and the intra-op pool run
// threads besides the caller). `--threads=N` sets fusegrad's intra-op threads, which oneDNN
// follows, in the hand-written products too (Note [thread count followers]).
// Usage: mlp_train_step [--threads=N] [benchmark flags]  (docs/benchmarks.md, "Training").
#include <cblas.h>
#include <dnnl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <fusegrad/eval/host_openmp.hpp>
#include <fusegrad/nn.hpp>

#include "chain_input.hpp"

void adam_ceiling(float* w, float* m, float* v, const float* g, std::size_t n, float alpha, float c1, float c2,
                  float eps);

namespace nn = fg::nn;

namespace {
constexpr int batch = 128, in = 784, hidden = 256, classes = 10;
constexpr float sgd_lr = 0.01f, adam_lr = 1e-3f, adam_b1 = 0.9f, adam_b2 = 0.999f, adam_eps = 1e-7f;
constexpr int fit_batches = 16;

using buffer = std::vector<float>;

/// The fixed data: inputs, labels, and the initial weights (Glorot-uniform kernels, small
/// nonzero biases so that their gradient path is exercised), the same for every case.
struct problem {
  fg::tensor<float> x = fg::random::normal<float>({batch, in}, 1);
  fg::tensor<std::int64_t> y = fg::random::uniform<std::int64_t>({batch}, 2, 0, classes);
  std::vector<fg::tensor<float>> weights{glorot(in, hidden, 3), small({hidden}, 4), glorot(hidden, hidden, 5),
                                         small({hidden}, 6), glorot(hidden, classes, 7), small({classes}, 8)};
  // fit_step's epoch: fit_batches batches, the first of them x and y.
  fg::tensor<float> fit_x = fg::concat({x, fg::random::normal<float>({(fit_batches - 1) * batch, in}, 9)}, 0);
  fg::tensor<std::int64_t> fit_y =
      fg::concat({y, fg::random::uniform<std::int64_t>({(fit_batches - 1) * batch}, 10, 0, classes)}, 0);

  static fg::tensor<float> glorot(std::size_t fan_in, std::size_t fan_out, std::uint64_t seed) {
    const float limit = std::sqrt(6.f / static_cast<float>(fan_in + fan_out));
    return fg::random::uniform<float>({fan_in, fan_out}, seed, -limit, limit);
  }
  static fg::tensor<float> small(const fg::shape& s, std::uint64_t seed) {
    return fg::random::uniform<float>(s, seed, -0.05f, 0.05f);
  }
};

const problem& data() {
  static const problem p;
  return p;
}

buffer copy_of(const fg::tensor<float>& t) { return buffer(t.data(), t.data() + t.shape().elements()); }

// Row-major C (m x n) = op(A) . op(B), op(A) m x k.
void gemm(bool ta, bool tb, int m, int n, int k, const float* a, const float* b, float* c) {
  fusegrad::host::onednn::follow_threads();  // the OpenMP thread count fusegrad's products run on
  dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, ta ? m : k, b, tb ? k : n, 0.0f, c, n);
}
// The same product through OpenBLAS, on the thread count fg::config sets for it.
void gemm_openblas(bool ta, bool tb, int m, int n, int k, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a,
              ta ? m : k, b, tb ? k : n, 0.0f, c, n);
}

/// The hand-written step's state: the weights and every intermediate, allocated once.
struct hand_step {
  const float* x;
  std::vector<std::int64_t> y;
  buffer w1, b1, w2, b2, w3, b3;                  // parameters
  buffer h1, h2, z;                               // activations, logits
  buffer d3, d2, d1;                              // dloss/dz, dloss/d(pre-activation 2, 1)
  buffer dw1, db1, dw2, db2, dw3, db3;            // gradients
  float loss = 0;

  hand_step()
      : x(data().x.data()),
        y(data().y.data(), data().y.data() + batch),
        w1(copy_of(data().weights[0])), b1(copy_of(data().weights[1])), w2(copy_of(data().weights[2])),
        b2(copy_of(data().weights[3])), w3(copy_of(data().weights[4])), b3(copy_of(data().weights[5])),
        h1(batch * hidden), h2(batch * hidden), z(batch * classes), d3(batch * classes), d2(batch * hidden),
        d1(batch * hidden), dw1(in * hidden), db1(hidden), dw2(hidden * hidden), db2(hidden),
        dw3(hidden * classes), db3(classes) {}

  static void bias_relu(float* __restrict h, const float* __restrict b, int rows, int cols) {
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) h[r * cols + c] = std::max(h[r * cols + c] + b[c], 0.f);
  }
  /// d *= (h > 0) and db = the column sums of d.
  static void relu_backward(float* __restrict d, const float* __restrict h, float* __restrict db, int rows, int cols) {
    std::fill(db, db + cols, 0.f);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) {
        const float g = h[r * cols + c] > 0.f ? d[r * cols + c] : 0.f;
        d[r * cols + c] = g;
        db[c] += g;
      }
  }
  static void sgd(float* __restrict w, const float* __restrict g, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) w[i] -= sgd_lr * g[i];
  }

  /// Forward and backward: the loss and every gradient.
  void gradients() {
    gemm(false, false, batch, hidden, in, x, w1.data(), h1.data());
    bias_relu(h1.data(), b1.data(), batch, hidden);
    gemm(false, false, batch, hidden, hidden, h1.data(), w2.data(), h2.data());
    bias_relu(h2.data(), b2.data(), batch, hidden);
    gemm(false, false, batch, classes, hidden, h2.data(), w3.data(), z.data());
    // The logits, the mean cross-entropy and its gradient (softmax - one_hot) / batch.
    double total = 0;
    std::fill(db3.begin(), db3.end(), 0.f);
    for (int r = 0; r < batch; ++r) {
      float* zr = z.data() + r * classes;
      float* dr = d3.data() + r * classes;
      float m = -INFINITY;
      for (int c = 0; c < classes; ++c) m = std::max(m, zr[c] += b3[static_cast<std::size_t>(c)]);
      float s = 0;
      for (int c = 0; c < classes; ++c) s += dr[c] = std::exp(zr[c] - m);
      const auto label = static_cast<int>(y[static_cast<std::size_t>(r)]);
      total += std::log(s) + m - zr[label];
      const float scale = 1.f / (s * batch);
      for (int c = 0; c < classes; ++c) {
        dr[c] = dr[c] * scale - (c == label ? 1.f / batch : 0.f);
        db3[static_cast<std::size_t>(c)] += dr[c];
      }
    }
    loss = static_cast<float>(total / batch);
    gemm(true, false, hidden, classes, batch, h2.data(), d3.data(), dw3.data());
    gemm(false, true, batch, hidden, classes, d3.data(), w3.data(), d2.data());
    relu_backward(d2.data(), h2.data(), db2.data(), batch, hidden);
    gemm(true, false, hidden, hidden, batch, h1.data(), d2.data(), dw2.data());
    gemm(false, true, batch, hidden, hidden, d2.data(), w2.data(), d1.data());
    relu_backward(d1.data(), h1.data(), db1.data(), batch, hidden);
    gemm(true, false, in, hidden, batch, x, d1.data(), dw1.data());
  }
  void step() {
    gradients();
    sgd(w1.data(), dw1.data(), w1.size());
    sgd(b1.data(), db1.data(), b1.size());
    sgd(w2.data(), dw2.data(), w2.size());
    sgd(b2.data(), db2.data(), b2.size());
    sgd(w3.data(), dw3.data(), w3.size());
    sgd(b3.data(), db3.data(), b3.size());
  }
  std::vector<const buffer*> grads() const { return {&dw1, &db1, &dw2, &db2, &dw3, &db3}; }

  // Adam's moments and step count (hand_adam).
  std::vector<buffer> m, v;
  int t = 0;
  void adam_step() {
    gradients();
    if (m.empty())
      for (const buffer* g : grads()) m.emplace_back(g->size(), 0.f), v.emplace_back(g->size(), 0.f);
    ++t;
    const float alpha = adam_lr * std::sqrt(1 - std::pow(adam_b2, static_cast<float>(t))) /
                        (1 - std::pow(adam_b1, static_cast<float>(t)));
    buffer* ws[] = {&w1, &b1, &w2, &b2, &w3, &b3};
    const std::vector<const buffer*> g = grads();
    for (std::size_t i = 0; i < g.size(); ++i)
      adam_ceiling(ws[i]->data(), m[i].data(), v[i].data(), g[i]->data(), g[i]->size(), alpha, 1 - adam_b1,
                   1 - adam_b2, adam_eps);
  }
};

template <void (*Gemm)(bool, bool, int, int, int, const float*, const float*, float*)>
void eight_gemms(benchmark::State& state) {
  hand_step h;
  h.gradients();  // realistic values in every buffer
  for (auto _ : state) {
    Gemm(false, false, batch, hidden, in, h.x, h.w1.data(), h.h1.data());
    Gemm(false, false, batch, hidden, hidden, h.h1.data(), h.w2.data(), h.h2.data());
    Gemm(false, false, batch, classes, hidden, h.h2.data(), h.w3.data(), h.z.data());
    Gemm(true, false, hidden, classes, batch, h.h2.data(), h.d3.data(), h.dw3.data());
    Gemm(false, true, batch, hidden, classes, h.d3.data(), h.w3.data(), h.d2.data());
    Gemm(true, false, hidden, hidden, batch, h.h1.data(), h.d2.data(), h.dw2.data());
    Gemm(false, true, batch, hidden, hidden, h.d2.data(), h.w2.data(), h.d1.data());
    Gemm(true, false, in, hidden, batch, h.x, h.d1.data(), h.dw1.data());
    benchmark::DoNotOptimize(h.dw1.data());
    benchmark::ClobberMemory();
  }
}

void gemms(benchmark::State& state) { eight_gemms<gemm>(state); }
void gemms_openblas(benchmark::State& state) { eight_gemms<gemm_openblas>(state); }

void hand(benchmark::State& state) {
  hand_step h;
  for (auto _ : state) {
    h.step();
    benchmark::DoNotOptimize(h.w1.data());
    benchmark::ClobberMemory();
  }
}

void hand_adam(benchmark::State& state) {
  hand_step h;
  for (auto _ : state) {
    h.adam_step();
    benchmark::DoNotOptimize(h.w1.data());
    benchmark::ClobberMemory();
  }
}

/// The model, built on the fixed data and given the fixed initial weights.
nn::sequential make_model() {
  nn::sequential model{nn::dense(hidden, {.activation = "relu"}), nn::dense(hidden, {.activation = "relu"}),
                       nn::dense(classes)};
  model(data().x, false);
  std::vector<fg::variable<float>> vars = nn::trainable_variables(model);
  // Copies: an update may reuse a variable's buffer when nothing else holds it.
  for (std::size_t i = 0; i < vars.size(); ++i)
    vars[i].assign(fg::tensor<float>(data().weights[i].shape(), copy_of(data().weights[i])));
  return model;
}

/// Whether the variables moved from the initial weights by `expected(i, j)` (variable i,
/// element j), within float32 rounding; otherwise a message naming the first difference.
template <class F>
std::string moved_by(const std::vector<fg::variable<float>>& vars, F expected) {
  for (std::size_t i = 0; i < vars.size(); ++i) {
    const fg::tensor<float> now = vars[i].peek(), before = data().weights[i];
    const std::size_t n = now.shape().elements();
    float largest = 0;
    for (std::size_t j = 0; j < n; ++j) largest = std::max(largest, std::abs(expected(i, j)));
    for (std::size_t j = 0; j < n; ++j) {
      const float got = now.data()[j] - before.data()[j], want = expected(i, j);
      if (!(std::abs(got - want) <= 2e-3f * largest + 1e-8f))
        return vars[i].name() + "[" + std::to_string(j) + "] moved by " + std::to_string(got) + ", expected " +
               std::to_string(want);
    }
  }
  return "";
}

template <class Optimizer>
void run_sequential(benchmark::State& state, Optimizer opt, bool adam) {
  nn::sequential model = make_model();
  const std::vector<fg::variable<float>> vars = nn::trainable_variables(model);
  nn::losses::sparse_categorical_crossentropy loss_fn({.from_logits = true});
  const fg::tensor<float>& x = data().x;
  const fg::tensor<std::int64_t>& y = data().y;
  auto step = [&] {
    fg::gradient_tape tape;
    const fg::tensor<float> loss = loss_fn(y, model(x, true));
    opt.apply_gradients(tape.gradient(loss, vars), vars);
  };
  // The first step against the hand-written gradients at the same weights: SGD moves a weight
  // by -lr g, Adam's first step by -lr s g / (s |g| + eps) with s = sqrt(1 - beta_2).
  hand_step h;
  h.gradients();
  step();
  const std::vector<const buffer*> g = h.grads();
  const float s = std::sqrt(1 - adam_b2);
  const std::string wrong = moved_by(vars, [&](std::size_t i, std::size_t j) {
    const float gj = (*g[i])[j];
    return adam ? -adam_lr * s * gj / (s * std::abs(gj) + adam_eps) : -sgd_lr * gj;
  });
  if (!wrong.empty()) {
    state.SkipWithError(("the first step differs from the hand-written one: " + wrong).c_str());
    return;
  }
  for (auto _ : state) step();
}

void sequential_sgd(benchmark::State& state) { run_sequential(state, fg::optimizers::sgd({.learning_rate = sgd_lr}), false); }

void sequential_adam(benchmark::State& state) {
  run_sequential(state, fg::optimizers::adam({.learning_rate = adam_lr, .beta_2 = adam_b2, .epsilon = adam_eps}), true);
}

void fit_step(benchmark::State& state) {
  nn::sequential model = make_model();
  model.compile({.optimizer = fg::optimizers::sgd({.learning_rate = sgd_lr}),
                 .loss = nn::losses::sparse_categorical_crossentropy({.from_logits = true})});
  const nn::fit_options o{.batch_size = batch, .epochs = 1, .verbose = 0};
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    model.fit(data().fit_x, data().fit_y, o);
    const std::chrono::duration<double> t = std::chrono::steady_clock::now() - start;
    state.SetIterationTime(t.count() / fit_batches);
  }
}
}  // namespace

BENCHMARK(gemms)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(gemms_openblas)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(hand)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(hand_adam)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(sequential_sgd)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(sequential_adam)->Unit(benchmark::kMillisecond)->UseRealTime();
// One iteration is one epoch; its time is reported per step (the epoch's time / fit_batches).
BENCHMARK(fit_step)->Unit(benchmark::kMillisecond)->UseManualTime();

int main(int argc, char** argv) { return chain_bench::run_main(argc, argv); }
