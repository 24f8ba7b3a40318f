// Forward + backward of loss = sum(log(1 + exp(x)) * sigmoid(x) + x * x) on float32 vectors
// of 1e3 to 1e7 elements, in one run: fusegrad under a gradient tape (one fused forward pass,
// one fused backward pass), fusegrad op by op (one tensor per op, so one tape entry per op),
// the hand-written one-pass loop computing loss and dloss/dx (accurate here, fast math in
// chain_ceiling.cpp: the ceiling), and libtorch with -Dtorch=enabled. fusegrad and libtorch
// run on one thread unless `--threads=N` says otherwise (0: every core); the hand-written
// loops always run on one.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include <benchmark/benchmark.h>
#include <fusegrad/fusegrad.hpp>

#include "chain_input.hpp"

#ifdef FUSEGRAD_BENCH_TORCH
#include <torch/torch.h>
#endif

// Defined in chain_ceiling.cpp, compiled with -O3 -march=native -ffast-math.
double chain_ceiling_forward_backward(const float* x, float* dx, std::size_t n);

namespace {

using namespace chain_bench;

/// The same loop as chain_ceiling_forward_backward, compiled without -ffast-math.
double chain_accurate_forward_backward(const float* x, float* dx, std::size_t n) {
  double loss = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float sp = std::log(1.f + std::exp(v));
    const float s = 1.f / (1.f + std::exp(-v));
    loss += sp * s + v * v;
    dx[i] = s * s + sp * s * (1.f - s) + 2.f * v;
  }
  return loss;
}

/// Stops the benchmark when a fusegrad gradient disagrees with the hand-derived one, so a
/// wrong result is never timed.
bool gradient_matches(benchmark::State& state, const std::vector<float>& x, const fg::tensor<float>& g) {
  std::vector<float> ref(x.size());
  chain_accurate_forward_backward(x.data(), ref.data(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    if (std::abs(g.data()[i] - ref[i]) > 1e-4f * (1.f + std::abs(ref[i]))) {
      state.SkipWithError("the fusegrad gradient differs from the hand-derived one");
      return false;
    }
  return true;
}

fg::tensor<float> fusegrad_fused_gradient(const fg::tensor<float>& x) {
  fg::gradient_tape tape;
  tape.watch(x);
  fg::tensor<float> loss = fg::sum(fg::log(1 + fg::exp(x)) * fg::sigmoid(x) + x * x);
  benchmark::DoNotOptimize(loss.data());
  return tape.gradient(loss, x);
}

fg::tensor<float> fusegrad_op_by_op_gradient(const fg::tensor<float>& x) {
  fg::gradient_tape tape;
  tape.watch(x);
  fg::tensor<float> e = fg::exp(x);
  fg::tensor<float> p = 1 + e;
  fg::tensor<float> sp = fg::log(p);
  fg::tensor<float> s = fg::sigmoid(x);
  fg::tensor<float> a = sp * s;
  fg::tensor<float> q = x * x;
  fg::tensor<float> y = a + q;
  fg::tensor<float> loss = fg::sum(y);
  benchmark::DoNotOptimize(loss.data());
  return tape.gradient(loss, x);
}

template <fg::tensor<float> (*Gradient)(const fg::tensor<float>&)>
void fusegrad_benchmark(benchmark::State& state) {
  const std::vector<float> v = chain_input(size_of(state));
  const fg::tensor<float> x(fg::shape{v.size()}, v);
  if (!gradient_matches(state, v, Gradient(x))) return;
  for (auto _ : state) {
    fg::tensor<float> g = Gradient(x);
    benchmark::DoNotOptimize(g.data());
  }
  count_items(state);
}

void fusegrad_fused(benchmark::State& state) { fusegrad_benchmark<fusegrad_fused_gradient>(state); }
void fusegrad_op_by_op(benchmark::State& state) { fusegrad_benchmark<fusegrad_op_by_op_gradient>(state); }

template <double (*Loop)(const float*, float*, std::size_t)>
void hand_loop_benchmark(benchmark::State& state) {
  const std::vector<float> x = chain_input(size_of(state));
  std::vector<float> dx(x.size());
  for (auto _ : state) {
    double loss = Loop(x.data(), dx.data(), x.size());
    benchmark::DoNotOptimize(loss);
    benchmark::DoNotOptimize(dx.data());
    benchmark::ClobberMemory();
  }
  count_items(state);
}

void scalar_loop_accurate(benchmark::State& state) { hand_loop_benchmark<chain_accurate_forward_backward>(state); }
void ceiling_fast_math(benchmark::State& state) { hand_loop_benchmark<chain_ceiling_forward_backward>(state); }

#ifdef FUSEGRAD_BENCH_TORCH
void libtorch_autograd(benchmark::State& state) {
  torch::set_num_threads(threads());
  std::vector<float> v = chain_input(size_of(state));
  const torch::Tensor x =
      torch::from_blob(v.data(), {static_cast<long>(v.size())}, torch::kFloat32).clone().requires_grad_(true);
  for (auto _ : state) {
    torch::Tensor loss = (torch::log(1 + torch::exp(x)) * torch::sigmoid(x) + x * x).sum();
    torch::Tensor g = torch::autograd::grad({loss}, {x})[0];
    benchmark::DoNotOptimize(g.data_ptr());
  }
  count_items(state);
}
BENCHMARK(libtorch_autograd)->RangeMultiplier(10)->Range(1000, 10000000);
#endif

BENCHMARK(fusegrad_fused)->RangeMultiplier(10)->Range(1000, 10000000);
BENCHMARK(fusegrad_op_by_op)->RangeMultiplier(10)->Range(1000, 10000000);
BENCHMARK(scalar_loop_accurate)->RangeMultiplier(10)->Range(1000, 10000000);
BENCHMARK(ceiling_fast_math)->RangeMultiplier(10)->Range(1000, 10000000);

}  // namespace

int main(int argc, char** argv) { return chain_bench::run_main(argc, argv); }
