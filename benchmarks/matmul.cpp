// Seed 002's timing: a 1000 x 1000 float32 matrix of normal values multiplied by itself 200
// times (x = matmul(x, x)) on the CPU, printed as the seed prints it ("CPU: 1.23 secs") and as
// GFLOP/s. Then Google Benchmark compares one fg::matmul with the dnnl_sgemm call it wraps
// (Note [float32 products]) and with OpenBLAS's cblas_sgemm, all three on fusegrad's intra-op
// thread count, which oneDNN and OpenBLAS follow (--threads=N, 1 by default, 0 for every core).

#include <cblas.h>
#include <dnnl.h>

#include <chrono>
#include <ctime>
#include <cstdio>
#include <vector>

#include <benchmark/benchmark.h>
#include <fusegrad/eval/host_openmp.hpp>
#include <fusegrad/fusegrad.hpp>

#include "chain_input.hpp"

namespace {

constexpr std::size_t dim = 1000;
constexpr int steps = 200;
constexpr double flops_per_product = 2.0 * dim * dim * dim;

struct timing {
  double wall;  ///< seconds on the clock, as the seed measures
  double cpu;   ///< seconds of CPU time of the process (all threads)
};

/// Times `steps` products x = matmul(x, x), after one untimed warm-up product.
timing measure(fg::tensor<float> x) {
  benchmark::DoNotOptimize(fg::matmul(x, x).data());
  const std::clock_t cpu_start = std::clock();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) x = fg::matmul(x, x);
  // Reading the values back, as the seed's x.numpy() does (the host evaluator is synchronous).
  benchmark::DoNotOptimize(x.numpy().data());
  const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - start;
  return {wall.count(), static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC};
}

void report_flops(benchmark::State& state) {
  state.counters["flops"] = benchmark::Counter(flops_per_product, benchmark::Counter::kIsIterationInvariantRate);
}

void fusegrad_matmul(benchmark::State& state) {
  const fg::tensor<float> x = fg::random::normal<float>(fg::shape{dim, dim}, 2);
  for (auto _ : state) {
    fg::tensor<float> y = fg::matmul(x, x);
    benchmark::DoNotOptimize(y.data());
  }
  report_flops(state);
}

void onednn_sgemm(benchmark::State& state) {
  const fg::tensor<float> x = fg::random::normal<float>(fg::shape{dim, dim}, 2);
  std::vector<float> y(dim * dim);
  const auto n = static_cast<dnnl_dim_t>(dim);
  for (auto _ : state) {
    fusegrad::host::onednn::follow_threads();  // the OpenMP thread count fg::matmul runs on
    dnnl_sgemm('N', 'N', n, n, n, 1.0f, x.data(), n, x.data(), n, 0.0f, y.data(), n);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  report_flops(state);
}

void openblas_sgemm(benchmark::State& state) {
  const fg::tensor<float> x = fg::random::normal<float>(fg::shape{dim, dim}, 2);
  std::vector<float> y(dim * dim);
  const int n = static_cast<int>(dim);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, x.data(), n, x.data(), n, 0.0f, y.data(), n);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  report_flops(state);
}

BENCHMARK(fusegrad_matmul)->Unit(benchmark::kMillisecond);
BENCHMARK(onednn_sgemm)->Unit(benchmark::kMillisecond);
BENCHMARK(openblas_sgemm)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  chain_bench::threads_from_args(argc, argv);
  std::printf("Time to multiply a (%zu, %zu) matrix by itself %d times:\n", dim, dim, steps);
  const timing t = measure(fg::random::normal<float>(fg::shape{dim, dim}, 1));
  std::printf("CPU: %.2f secs\n", t.wall);
  std::printf("  %.1f GFLOP/s on the clock; %.2f secs of CPU time, %.1f GFLOP/s per CPU second\n",
              steps * flops_per_product / t.wall * 1e-9, t.cpu, steps * flops_per_product / t.cpu * 1e-9);
  std::printf("GPU: not measured here (see docs/benchmarks.md)\n\n");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
