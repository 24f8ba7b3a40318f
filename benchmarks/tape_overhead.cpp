// The fixed cost of one eager op on scalars: 100000 statements `y = y * a;  y = y + b;` on
// 0-d float32 tensors, each statement one op and one evaluation, hence one tape entry when y
// is watched. Reported as time_per_op (CPU time / number of ops) for plain eager ops with no
// tape, forward under a tape (recording, then dropping the tape), and forward + gradient().
// libtorch's equivalents are added with -Dtorch=enabled.

#include <cstdint>

#include <benchmark/benchmark.h>
#include <fusegrad/fusegrad.hpp>

#ifdef FUSEGRAD_BENCH_TORCH
#include <torch/torch.h>
#endif

namespace {

constexpr std::int64_t op_count = 100000;  // two ops per loop turn

// y stays near b / (1 - a) = 1: no overflow, no denormals, whatever the op count.
constexpr float scale = 0.999f;
constexpr float shift = 0.001f;

/// Reports the iteration's CPU time divided by op_count (printed with its unit, e.g. 52ns).
void report_per_op(benchmark::State& state) {
  state.counters["time_per_op"] = benchmark::Counter(
      static_cast<double>(op_count), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

/// Runs the op chain from y, one evaluation per op.
fg::tensor<float> scalar_chain(fg::tensor<float> y, const fg::tensor<float>& a, const fg::tensor<float>& b) {
  for (std::int64_t i = 0; i < op_count / 2; ++i) {
    y = y * a;
    y = y + b;
  }
  return y;
}

void fusegrad_eager_no_tape(benchmark::State& state) {
  const fg::tensor<float> a = scale, b = shift, x = 0.5f;
  for (auto _ : state) {
    fg::tensor<float> y = scalar_chain(x, a, b);
    benchmark::DoNotOptimize(y.data());
  }
  report_per_op(state);
}

void fusegrad_tape_forward(benchmark::State& state) {
  const fg::tensor<float> a = scale, b = shift, x = 0.5f;
  for (auto _ : state) {
    fg::gradient_tape tape;
    tape.watch(x);
    fg::tensor<float> y = scalar_chain(x, a, b);
    benchmark::DoNotOptimize(y.data());
  }
  report_per_op(state);
}

void fusegrad_tape_forward_backward(benchmark::State& state) {
  const fg::tensor<float> a = scale, b = shift, x = 0.5f;
  for (auto _ : state) {
    fg::gradient_tape tape;
    tape.watch(x);
    fg::tensor<float> y = scalar_chain(x, a, b);
    fg::tensor<float> g = tape.gradient(y, x);  // scale^(op_count / 2)
    benchmark::DoNotOptimize(g.data());
  }
  report_per_op(state);
}

#ifdef FUSEGRAD_BENCH_TORCH
torch::Tensor torch_scalar_chain(torch::Tensor y, const torch::Tensor& a, const torch::Tensor& b) {
  for (std::int64_t i = 0; i < op_count / 2; ++i) {
    y = y * a;
    y = y + b;
  }
  return y;
}

void libtorch_eager_no_grad(benchmark::State& state) {
  torch::set_num_threads(1);
  const torch::Tensor a = torch::scalar_tensor(scale), b = torch::scalar_tensor(shift);
  const torch::Tensor x = torch::scalar_tensor(0.5f);
  for (auto _ : state) {
    torch::Tensor y = torch_scalar_chain(x, a, b);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  report_per_op(state);
}

void libtorch_autograd_forward(benchmark::State& state) {
  torch::set_num_threads(1);
  const torch::Tensor a = torch::scalar_tensor(scale), b = torch::scalar_tensor(shift);
  const torch::Tensor x = torch::scalar_tensor(0.5f).requires_grad_(true);
  for (auto _ : state) {
    torch::Tensor y = torch_scalar_chain(x, a, b);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  report_per_op(state);
}

void libtorch_autograd_forward_backward(benchmark::State& state) {
  torch::set_num_threads(1);
  const torch::Tensor a = torch::scalar_tensor(scale), b = torch::scalar_tensor(shift);
  const torch::Tensor x = torch::scalar_tensor(0.5f).requires_grad_(true);
  for (auto _ : state) {
    torch::Tensor y = torch_scalar_chain(x, a, b);
    torch::Tensor g = torch::autograd::grad({y}, {x})[0];
    benchmark::DoNotOptimize(g.data_ptr());
  }
  report_per_op(state);
}

BENCHMARK(libtorch_eager_no_grad)->Unit(benchmark::kMillisecond);
BENCHMARK(libtorch_autograd_forward)->Unit(benchmark::kMillisecond);
BENCHMARK(libtorch_autograd_forward_backward)->Unit(benchmark::kMillisecond);
#endif

BENCHMARK(fusegrad_eager_no_tape)->Unit(benchmark::kMillisecond);
BENCHMARK(fusegrad_tape_forward)->Unit(benchmark::kMillisecond);
BENCHMARK(fusegrad_tape_forward_backward)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
