// Forward pass of the elementwise chain y = log(1 + exp(x)) * sigmoid(x) + x * x on float32
// vectors of 1e3 to 1e7 elements, in one run: fusegrad fused (one pass), fusegrad op by op
// (one tensor per op), the hand-written loop compiled with the project's accurate flags, the
// same loop compiled with -ffast-math in chain_ceiling.cpp (the ceiling), xtensor with xsimd,
// and libtorch when built with -Dtorch=enabled. fusegrad and libtorch run on one thread unless
// `--threads=N` says otherwise (0: every core); the others always run on one.

// xtensor's own assignment is measured with its SIMD path switched on; this must come before
// any header that includes xtensor (fusegrad's do).
#define XTENSOR_USE_XSIMD

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <vector>

#include <benchmark/benchmark.h>
#include <fusegrad/fusegrad.hpp>
#include <xtensor/xarray.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xtensor_simd.hpp>

#include "chain_input.hpp"

#ifdef FUSEGRAD_BENCH_TORCH
#include <torch/torch.h>
#endif

// Defined in chain_ceiling.cpp, compiled with -O3 -march=native -ffast-math.
void chain_ceiling_forward(const float* x, float* y, std::size_t n);

namespace {

static_assert(!std::is_same_v<xt_simd::simd_type<float>, float>,
              "the xtensor comparison must be compiled with XTENSOR_USE_XSIMD");

using namespace chain_bench;

/// The same loop as chain_ceiling_forward, compiled here without -ffast-math: glibc's
/// scalar expf and logf, no vectorisation of the transcendental calls.
void chain_accurate_forward(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = std::log(1.f + std::exp(v)) * (1.f / (1.f + std::exp(-v))) + v * v;
  }
}

void fusegrad_fused(benchmark::State& state) {
  const std::vector<float> v = chain_input(size_of(state));
  const fg::tensor<float> x(fg::shape{v.size()}, v);
  for (auto _ : state) {
    fg::tensor<float> y = fg::log(1 + fg::exp(x)) * fg::sigmoid(x) + x * x;
    benchmark::DoNotOptimize(y.data());
  }
  count_items(state);
}

void fusegrad_op_by_op(benchmark::State& state) {
  const std::vector<float> v = chain_input(size_of(state));
  const fg::tensor<float> x(fg::shape{v.size()}, v);
  for (auto _ : state) {
    // Each node of the expression is evaluated into a tensor of its own, as an eager
    // framework without fusion would: seven passes and six temporaries.
    fg::tensor<float> y = fg::eager::evaluate_unfused(fg::log(1 + fg::exp(x)) * fg::sigmoid(x) + x * x);
    benchmark::DoNotOptimize(y.data());
  }
  count_items(state);
}

void scalar_loop_accurate(benchmark::State& state) {
  const std::vector<float> x = chain_input(size_of(state));
  std::vector<float> y(x.size());
  for (auto _ : state) {
    chain_accurate_forward(x.data(), y.data(), x.size());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  count_items(state);
}

void ceiling_fast_math(benchmark::State& state) {
  const std::vector<float> x = chain_input(size_of(state));
  std::vector<float> y(x.size());
  for (auto _ : state) {
    chain_ceiling_forward(x.data(), y.data(), x.size());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  count_items(state);
}

// The ceiling writing into a fresh (uninitialised) buffer each time, as an eager tensor
// library must: the difference to ceiling_fast_math is the cost of a new output buffer.
void ceiling_fast_math_new_buffer(benchmark::State& state) {
  const std::vector<float> x = chain_input(size_of(state));
  for (auto _ : state) {
    std::unique_ptr<float[]> y(new float[x.size()]);
    chain_ceiling_forward(x.data(), y.get(), x.size());
    benchmark::DoNotOptimize(y.get());
    benchmark::ClobberMemory();
  }
  count_items(state);
}

void xtensor_xsimd(benchmark::State& state) {
  const std::vector<float> v = chain_input(size_of(state));
  xt::xarray<float> xa = xt::xarray<float>::from_shape({v.size()});
  std::copy(v.begin(), v.end(), xa.begin());
  for (auto _ : state) {
    xt::xarray<float> y = xt::log(1 + xt::exp(xa)) * (1 / (1 + xt::exp(-xa))) + xa * xa;
    benchmark::DoNotOptimize(y.data());
  }
  count_items(state);
}

#ifdef FUSEGRAD_BENCH_TORCH
void libtorch_eager(benchmark::State& state) {
  torch::set_num_threads(threads());
  std::vector<float> v = chain_input(size_of(state));
  const torch::Tensor x = torch::from_blob(v.data(), {static_cast<long>(v.size())}, torch::kFloat32).clone();
  torch::NoGradGuard no_grad;
  for (auto _ : state) {
    torch::Tensor y = torch::log(1 + torch::exp(x)) * torch::sigmoid(x) + x * x;
    benchmark::DoNotOptimize(y.data_ptr());
  }
  count_items(state);
}
BENCHMARK(libtorch_eager)->RangeMultiplier(10)->Range(1000, 10000000);
#endif

BENCHMARK(fusegrad_fused)->RangeMultiplier(10)->Range(1000, 10000000);
BENCHMARK(fusegrad_op_by_op)->RangeMultiplier(10)->Range(1000, 10000000);
BENCHMARK(scalar_loop_accurate)->RangeMultiplier(10)->Range(1000, 10000000);
BENCHMARK(ceiling_fast_math)->RangeMultiplier(10)->Range(1000, 10000000);
BENCHMARK(ceiling_fast_math_new_buffer)->RangeMultiplier(10)->Range(1000, 10000000);
BENCHMARK(xtensor_xsimd)->RangeMultiplier(10)->Range(1000, 10000000);

}  // namespace

int main(int argc, char** argv) { return chain_bench::run_main(argc, argv); }
