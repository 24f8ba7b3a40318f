// Seed 002's performance section: the time to multiply a 1000 x 1000 matrix by itself 200
// times, on the CPU (OpenBLAS) and on the GPU (cuBLAS), chosen with fg::device_scope.
// Usage: matmul_timing [steps]
#include <fusegrad/fusegrad.hpp>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>

namespace {
/// Seconds for `steps` products x = x @ x; the first product (setup on the device) is not timed.
double measure(fg::tensor<float> x, int steps) {
  fg::matmul(x, x);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) x = fg::matmul(x, x);
  // A matmul may return before the GPU has finished; copying the result to the host waits
  // for it (and copies a little more than the products).
  const fg::tensor<float> h = x.cpu();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 200;
  const fg::shape s{1000, 1000};
  const double gflop = 2.0 * 1000 * 1000 * 1000 * steps / 1e9;
  std::cout << "Time to multiply a (1000, 1000) matrix by itself " << steps << " times:\n";
  double cpu_secs = 0;
  {
    fg::device_scope cpu("/cpu:0");
    cpu_secs = measure(fg::random::normal<float>(s, 1), steps);
    std::cout << "CPU: " << cpu_secs << " secs (" << gflop / cpu_secs << " GFLOP/s)\n";
  }
  if (fg::num_gpus() == 0) {
    std::cout << "GPU: not found; skipping\n";
    return 0;
  }
  fg::device_scope gpu("/gpu:0");
  const double gpu_secs = measure(fg::random::normal<float>(s, 1), steps);
  std::cout << "GPU: " << gpu_secs << " secs (" << gflop / gpu_secs << " GFLOP/s)\n";

  // The check: one product of the same matrix agrees between cuBLAS and OpenBLAS.
  const fg::tensor<float> a = fg::random::normal<float>(s, 2);  // on the GPU
  const fg::tensor<float> on_gpu = fg::matmul(a, a).cpu();
  const fg::tensor<float> a_host = a.cpu();
  const fg::tensor<float> on_cpu = fg::matmul(a_host, a_host);
  const float worst = fg::reduce_max(fg::abs(on_gpu - on_cpu)).item();
  const bool ok = worst < 1e-3f && cpu_secs > 0 && gpu_secs > 0;
  if (!ok) std::cerr << "matmul_timing: GPU and CPU products differ by " << worst << "\n";
  return ok ? 0 : 1;
}
