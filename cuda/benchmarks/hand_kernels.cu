// The hand-written kernels of the fused-chain benchmark (hand_kernels.hpp): what a CUDA
// programmer writes for the chain by hand, one grid-stride pass each.
#include "hand_kernels.hpp"

#include <algorithm>

namespace {

__global__ void chain_forward(const float* x, float* y, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{blockDim.x} * gridDim.x) {
    const float v = x[i];
    y[i] = logf(1.f + expf(v)) * (1.f / (1.f + expf(-v))) + v * v;
  }
}

// y and dy/dx = sigmoid(x)^2 + log(1 + e^x) sigmoid(x) (1 - sigmoid(x)) + 2x in one pass.
__global__ void chain_forward_backward(const float* x, float* y, float* dx, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{blockDim.x} * gridDim.x) {
    const float v = x[i];
    const float sp = logf(1.f + expf(v)), sig = 1.f / (1.f + expf(-v));
    y[i] = sp * sig + v * v;
    dx[i] = sig * sig + sp * sig * (1.f - sig) + 2.f * v;
  }
}

/// Blocks of 256 threads: enough to cover n, at most 32 per multiprocessor.
cudaError_t grid_for(std::size_t n, int& blocks) {
  int device = 0, sms = 0;
  if (const cudaError_t s = cudaGetDevice(&device); s != cudaSuccess) return s;
  if (const cudaError_t s = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device); s != cudaSuccess)
    return s;
  blocks = static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>((n + 255) / 256, static_cast<std::size_t>(sms) * 32)));
  return cudaSuccess;
}
}  // namespace

cudaError_t hand_chain_forward(const float* x, float* y, std::size_t n) {
  int blocks = 0;
  if (const cudaError_t s = grid_for(n, blocks); s != cudaSuccess) return s;
  chain_forward<<<blocks, 256>>>(x, y, n);
  return cudaGetLastError();
}

cudaError_t hand_chain_forward_backward(const float* x, float* y, float* dx, std::size_t n) {
  int blocks = 0;
  if (const cudaError_t s = grid_for(n, blocks); s != cudaSuccess) return s;
  chain_forward_backward<<<blocks, 256>>>(x, y, dx, n);
  return cudaGetLastError();
}
