// One Adam step of a float32 variable of n parameters, 2^18 (cache-resident, about the MLP of
// mlp_train_step.cpp) and 2^20 (Keras' formula, Note [training updates]): fg::apply_adam (one
// pass, in place as nothing else holds the buffers), the same through fg::optimizers::adam, the
// step written as three fusegrad assignments (three passes into new buffers), and a
// hand-written one-pass loop in place, compiled with the project's flags (scalar: sqrt under
// errno does not vectorise) and with fast math (vectorised, the square root and the division
// approximated; chain_ceiling.cpp).
// Usage: adam_update [--threads=N] [benchmark flags]  (docs/benchmarks.md, "Training").
#include <benchmark/benchmark.h>
#include <fusegrad/nn.hpp>

#include <cmath>
#include <vector>

#include "chain_input.hpp"

void adam_ceiling(float* w, float* m, float* v, const float* g, std::size_t n, float alpha, float c1, float c2,
                  float eps);

namespace {
constexpr float lr = 1e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-7f;

void hand_loop(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const fg::tensor<float> g0 = fg::random::normal<float>({n}, 1), w0 = fg::random::normal<float>({n}, 2);
  std::vector<float> w(w0.data(), w0.data() + n), m(n, 0.f), v(n, 0.f), g(g0.data(), g0.data() + n);
  int t = 0;
  for (auto _ : state) {
    ++t;
    const float alpha = lr * std::sqrt(1 - std::pow(b2, static_cast<float>(t))) / (1 - std::pow(b1, static_cast<float>(t)));
    const float c1 = 1 - b1, c2 = 1 - b2;
    float* __restrict pw = w.data();
    float* __restrict pm = m.data();
    float* __restrict pv = v.data();
    const float* __restrict pg = g.data();
    for (std::size_t i = 0; i < n; ++i) {
      pm[i] += (pg[i] - pm[i]) * c1;
      pv[i] += (pg[i] * pg[i] - pv[i]) * c2;
      pw[i] -= (pm[i] * alpha) / (std::sqrt(pv[i]) + eps);
    }
    benchmark::DoNotOptimize(pw);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float) * 7));
}

void hand_loop_fast_math(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const fg::tensor<float> g0 = fg::random::normal<float>({n}, 1), w0 = fg::random::normal<float>({n}, 2);
  std::vector<float> w(w0.data(), w0.data() + n), m(n, 0.f), v(n, 0.f), g(g0.data(), g0.data() + n);
  int t = 0;
  for (auto _ : state) {
    ++t;
    const float alpha = lr * std::sqrt(1 - std::pow(b2, static_cast<float>(t))) / (1 - std::pow(b1, static_cast<float>(t)));
    adam_ceiling(w.data(), m.data(), v.data(), g.data(), n, alpha, 1 - b1, 1 - b2, eps);
    benchmark::DoNotOptimize(w.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float) * 7));
}

void fusegrad_apply_adam(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const fg::tensor<float> g = fg::random::normal<float>({n}, 1);
  fg::variable<float> w(fg::random::normal<float>({n}, 2), "w"), m(fg::zeros<float>({n}), "m"), v(fg::zeros<float>({n}), "v");
  std::int64_t t = 0;
  for (auto _ : state) fg::apply_adam(w, m, v, g, {.learning_rate = lr, .step = ++t});
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float) * 7));
}

void fusegrad_optimizer(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const std::vector<fg::tensor<float>> g{fg::random::normal<float>({n}, 1)};
  const std::vector<fg::variable<float>> w{fg::variable<float>(fg::random::normal<float>({n}, 2), "w")};
  fg::optimizers::adam opt({.learning_rate = lr});
  for (auto _ : state) opt.apply_gradients(g, w);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float) * 7));
}

void fusegrad_composed(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const fg::tensor<float> g = fg::random::normal<float>({n}, 1);
  fg::variable<float> w(fg::random::normal<float>({n}, 2), "w"), m(fg::zeros<float>({n}), "m"), v(fg::zeros<float>({n}), "v");
  int t = 0;
  for (auto _ : state) {
    ++t;
    const float alpha = lr * std::sqrt(1 - std::pow(b2, static_cast<float>(t))) / (1 - std::pow(b1, static_cast<float>(t)));
    m.assign(m + (g - m) * (1 - b1));
    v.assign(v + (g * g - v) * (1 - b2));
    w.assign(w - m * alpha / (fg::sqrt(v) + eps));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float) * 7));
}
}  // namespace

BENCHMARK(hand_loop)->Arg(1 << 18)->Arg(1 << 20)->Unit(benchmark::kMicrosecond);
BENCHMARK(hand_loop_fast_math)->Arg(1 << 18)->Arg(1 << 20)->Unit(benchmark::kMicrosecond);
BENCHMARK(fusegrad_apply_adam)->Arg(1 << 18)->Arg(1 << 20)->Unit(benchmark::kMicrosecond);
BENCHMARK(fusegrad_optimizer)->Arg(1 << 18)->Arg(1 << 20)->Unit(benchmark::kMicrosecond);
BENCHMARK(fusegrad_composed)->Arg(1 << 18)->Arg(1 << 20)->Unit(benchmark::kMicrosecond);

int main(int argc, char** argv) { return chain_bench::run_main(argc, argv); }
