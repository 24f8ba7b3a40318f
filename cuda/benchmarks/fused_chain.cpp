// The elementwise chain y = log(1 + exp(x)) * sigmoid(x) + x * x on float32 vectors of 1e6 to
// 1e8 elements on the GPU, forward and forward + backward, in one run: fusegrad fused (one
// kernel per pass), a hand-written CUDA kernel doing the same work in one pass, fusegrad op by
// op (one kernel and one temporary per op), and PyTorch eager where it is installed with CUDA
// (fused_chain_torch.py, run for each N). Each is reported as achieved bandwidth (the
// bytes the work must move, divided by its time) and as a fraction of a device-to-device copy
// measured in the same run. Usage: fused_chain [max_n]   (default 1e8)
// Built as separate kernels (Note [separate kernels]): this file by the host compiler, the
// hand-written kernels (hand_kernels.cu) and fusegrad's kernels by nvcc.
#include <fusegrad/fusegrad.hpp>

#include <cuda_runtime_api.h>

#include "hand_kernels.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

void check(cudaError_t s, const char* call) {
  if (s != cudaSuccess) {
    std::fprintf(stderr, "fused_chain: %s failed: %s\n", call, cudaGetErrorString(s));
    std::exit(1);
  }
}

/// Median seconds per call of f over `reps` timed calls after one warm-up, the GPU drained
/// before and after each.
template <class F>
double seconds(F f, int reps) {
  f();
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    f();
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// The PyTorch eager rows for n (fused_chain_torch.py, in the same run), when the build named
/// the script (FUSEGRAD_TORCH_ROWS) and python3 runs; FUSEGRAD_PYTHON picks another interpreter.
void torch_rows(std::size_t n, int reps, double copy_bw) {
#if defined(FUSEGRAD_TORCH_ROWS)
  const char* python = std::getenv("FUSEGRAD_PYTHON");
  const std::string cmd = std::string(python ? python : "python3") + " '" + FUSEGRAD_TORCH_ROWS + "' " +
                          std::to_string(n) + " " + std::to_string(reps) + " " + std::to_string(copy_bw);
  std::fflush(stdout);
  if (std::system(cmd.c_str()) != 0) std::printf("%-9zu PyTorch eager: `%s` failed\n", n, cmd.c_str());
#else
  (void)n, (void)reps, (void)copy_bw;
#endif
}

void report(const char* pass, const char* who, std::size_t n, double secs, double bytes, double copy_bw) {
  const double bw = bytes / secs / 1e9;
  std::printf("%-9zu %-17s %-18s %10.4f ms %9.1f GB/s %6.2f of copy\n", n, pass, who, secs * 1e3, bw, bw / copy_bw);
}
}  // namespace

int main(int argc, char** argv) {
  if (fg::num_gpus() == 0) {
    std::printf("fused_chain (GPU benchmark): no GPU found; skipping\n");
    return 0;
  }
  const std::size_t max_n = argc > 1 ? static_cast<std::size_t>(std::atof(argv[1])) : std::size_t{100000000};
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::printf("fused chain, float32, on %s. Bytes per element: forward 8 (read x, write y), forward +\n"
              "backward 12 (read x, write y and dx); a copy moves 8 (read + write).\n\n", prop.name);
  std::printf("%-9s %-17s %-18s %13s %14s %14s\n", "N", "pass", "contender", "time", "bandwidth", "");
  fg::device_scope gpu("/gpu:0");
  for (std::size_t n = 1000000; n <= max_n; n *= 10) {
    const int reps = n >= 100000000 ? 10 : 50;
    const fg::tensor<float> x = fg::random::uniform<float>(fg::shape{n}, 20240601, -4.f, 4.f);
    fg::tensor<float> out(fg::shape{n}, fg::device::gpu(0)), out2(fg::shape{n}, fg::device::gpu(0));
    const double copy = seconds([&] {
      check(cudaMemcpy(out.buffer()->data, x.data(), n * sizeof(float), cudaMemcpyDeviceToDevice), "cudaMemcpy");
    }, reps);
    const double copy_bw = 8.0 * n / copy / 1e9;
    report("copy", "cudaMemcpy d2d", n, copy, 8.0 * n, copy_bw);

    const double fwd = 8.0 * n, fwd_bwd = 12.0 * n;
    report("forward", "fusegrad fused", n, seconds([&] {
      fg::tensor<float> y = fg::log(1 + fg::exp(x)) * fg::sigmoid(x) + x * x;
    }, reps), fwd, copy_bw);
    report("forward", "hand-written CUDA", n, seconds([&] {
      check(hand_chain_forward(x.data(), out.buffer()->data, n), "chain_forward");
    }, reps), fwd, copy_bw);
    report("forward", "fusegrad op by op", n, seconds([&] {
      fg::tensor<float> y = fg::eager::evaluate_unfused(fg::log(1 + fg::exp(x)) * fg::sigmoid(x) + x * x);
    }, reps), fwd, copy_bw);

    report("forward+backward", "fusegrad fused", n, seconds([&] {
      fg::gradient_tape tape;
      tape.watch(x);
      const fg::tensor<float> y = fg::log(1 + fg::exp(x)) * fg::sigmoid(x) + x * x;
      const fg::tensor<float> dx = tape.gradient(y, x);
    }, reps), fwd_bwd, copy_bw);
    report("forward+backward", "hand-written CUDA", n, seconds([&] {
      check(hand_chain_forward_backward(x.data(), out.buffer()->data, out2.buffer()->data, n), "chain_forward_backward");
    }, reps), fwd_bwd, copy_bw);
    report("forward+backward", "fusegrad op by op", n, seconds([&] {
      fg::gradient_tape tape;
      tape.watch(x);
      // One tensor per op: the tape records seven entries, and backward runs each on its own.
      const fg::tensor<float> e = fg::exp(x), e1 = 1 + e, l = fg::log(e1), s = fg::sigmoid(x);
      const fg::tensor<float> a = l * s, b = x * x, y = a + b;
      const fg::tensor<float> dx = tape.gradient(y, x);
    }, reps), fwd_bwd, copy_bw);
    torch_rows(n, reps, copy_bw);
    std::printf("\n");
  }
  return 0;
}
