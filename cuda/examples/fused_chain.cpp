// Fusion on the GPU: inside fg::device_scope("/gpu:0") the chain log(1 + exp(x)) * sigmoid(x)
// + x * x is one CUDA kernel, its sum one reduction, and its gradient one kernel, exactly as on
// the host (examples/fused_chain.cpp); the values come back with .cpu(). Built as separate
// kernels (Note [separate kernels]): this file by the host compiler, its kernels by nvcc.
#include <fusegrad/fusegrad.hpp>

#include <cmath>
#include <iostream>

int main() {
  if (fg::num_gpus() == 0) {
    std::cout << "fused_chain (GPU): no GPU found; skipping\n";
    return 0;
  }
  fg::device_scope gpu("/gpu:0");  // like `with tf.device("/gpu:0"):`
  const fg::tensor<double> x = fg::linspace<double>(-3.0, 3.0, 1000001);
  const auto& passes = fg::core::counters().passes;
  const auto start = passes;

  // One kernel, one output buffer on the GPU.
  const fg::tensor<double> y = fg::log(1 + fg::exp(x)) * fg::sigmoid(x) + x * x;
  const auto after_chain = passes;

  // The chain and its sum: one pass too.
  const fg::tensor<double> s = fg::reduce_sum(fg::log(1 + fg::exp(x)) * fg::sigmoid(x) + x * x);
  const auto after_sum = passes;

  // The backward pass of the chain: one kernel.
  fg::gradient_tape tape;
  tape.watch(x);
  const fg::tensor<double> loss = fg::reduce_sum(fg::log(1 + fg::exp(x)) * fg::sigmoid(x) + x * x);
  const auto before_gradient = passes;
  const fg::tensor<double> dx = tape.gradient(loss, x);
  const auto gradient_passes = passes - before_gradient;

  std::cout << "on " << y.device() << ": chain " << after_chain - start << " pass, chain + sum "
            << after_sum - after_chain << " pass, gradient " << gradient_passes << " pass\n";

  // Values against the formulas written out by hand at element 750000 (x = 1.5).
  const fg::tensor<double> yh = y.cpu(), dxh = dx.cpu();
  const double v = 1.5, sig = 1 / (1 + std::exp(-v));
  const double y_ref = std::log1p(std::exp(v)) * sig + v * v;
  const double dx_ref = sig * sig + std::log1p(std::exp(v)) * sig * (1 - sig) + 2 * v;
  const bool ok = after_chain - start == 1 && after_sum - after_chain == 1 && gradient_passes == 1 &&
                  y.device() == fg::device::gpu(0) && dx.device() == fg::device::gpu(0) &&
                  std::fabs(yh.data()[750000] - y_ref) < 1e-12 && std::fabs(dxh.data()[750000] - dx_ref) < 1e-12 &&
                  std::fabs(s.cpu().item() - loss.cpu().item()) < 1e-9 * std::fabs(s.cpu().item());
  if (!ok) std::cerr << "fused_chain (GPU): expected one pass per chain, sum and gradient, and matching values\n";
  return ok ? 0 : 1;
}
