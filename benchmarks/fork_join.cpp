// What the intra-op pool's threshold (Note [parallel threshold], core/parallel.hpp) is chosen
// from: the cost of one fork-join region of two tasks that spin for W us each (its time minus
// W), and the cheapest loop, z = x + y on float32, on one thread and split by hand into two
// ranges on the pool, below the threshold too. Wall-clock time: run it with both cores idle.
//   build-bench/benchmarks/fork_join --benchmark_min_time=0.2

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

#include <benchmark/benchmark.h>
#include <fusegrad/core/parallel.hpp>

namespace {

using clock_type = std::chrono::steady_clock;

void spin(double us) {
  const auto end = clock_type::now() + std::chrono::duration<double, std::micro>(us);
  while (clock_type::now() < end) {
  }
}

/// One region of two tasks of W us each on two threads.
void fork_join(benchmark::State& state) {
  fg::config::set_intra_op_parallelism_threads(2);
  const double us = static_cast<double>(state.range(0));
  for (auto _ : state) fusegrad::core::run_tasks(2, [&](std::size_t) { spin(us); });
  state.counters["spin_us"] = us;
}

/// z = x + y over n floats, split into `threads` ranges (a multiple of 64 elements each).
void add(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto threads = static_cast<std::size_t>(state.range(1));
  fg::config::set_intra_op_parallelism_threads(static_cast<int>(threads));
  std::vector<float> x(n, 1.5f), y(n, 2.5f), z(n);
  float* __restrict pz = z.data();
  const float* __restrict px = x.data();
  const float* __restrict py = y.data();
  auto range = [=](std::size_t t) {
    const std::size_t step = (n / threads + 63) / 64 * 64, lo = std::min(n, t * step), hi = std::min(n, lo + step);
    for (std::size_t i = lo; i < hi; ++i) pz[i] = px[i] + py[i];
  };
  for (auto _ : state) {
    fusegrad::core::run_tasks(threads, range);
    benchmark::DoNotOptimize(pz);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

BENCHMARK(fork_join)->Arg(0)->Arg(10)->Arg(20)->UseRealTime();
BENCHMARK(add)->ArgsProduct({benchmark::CreateRange(1 << 14, 1 << 20, 2), {1, 2}})->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
