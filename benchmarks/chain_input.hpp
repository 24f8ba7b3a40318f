#pragma once
// What the chain benchmarks (fused_chain.cpp, fused_backward.cpp) share: their input and the
// size and item count of a run.

#include <cstddef>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

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

}  // namespace chain_bench
