#pragma once
// What the benchmarks share: the chain benchmarks' (fused_chain.cpp, fused_backward.cpp) input,
// size and item count of a run, and the intra-op thread count every benchmark runs fusegrad on
// (`--threads=N`).

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <fusegrad/core/parallel.hpp>

namespace chain_bench {

/// The benchmark input: n values uniform in [-4, 4], the same for every contender.
inline std::vector<float> chain_input(std::size_t n) {
  std::mt19937 gen(20240601);
  std::uniform_real_distribution<float> dist(-4.f, 4.f);
  std::vector<float> v(n);
  for (float& e : v) e = dist(gen);
  return v;
}

/// The run's N.
inline std::size_t size_of(const benchmark::State& state) { return static_cast<std::size_t>(state.range(0)); }

/// Reports N elements per iteration.
inline void count_items(benchmark::State& state) { state.SetItemsProcessed(state.iterations() * state.range(0)); }

/// The thread count fusegrad (and libtorch) run on: `--threads=N` (removed from argv before
/// Google Benchmark reads it), 1 by default so that the single-threaded hand-written loops
/// and the ceiling stay the reference; 0 for every core.
inline int threads_from_args(int& argc, char** argv) {
  int threads = 1;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) threads = std::atoi(argv[i] + 10);
    else argv[kept++] = argv[i];
  }
  argc = kept;
  fg::config::set_intra_op_parallelism_threads(threads);
  benchmark::AddCustomContext("intra_op_threads", std::to_string(fusegrad::core::intra_op_threads()));
  return fusegrad::core::intra_op_threads();
}

/// The thread count threads_from_args set.
inline int threads() { return fusegrad::core::intra_op_threads(); }

/// BENCHMARK_MAIN with `--threads=N` (threads_from_args).
inline int run_main(int argc, char** argv) {
  threads_from_args(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace chain_bench
