#pragma once
// The hand-written CUDA kernels the fused-chain benchmark compares fusegrad with
// (cuda/benchmarks/hand_kernels.cu): the chain y = log(1 + exp(x)) * sigmoid(x) + x * x on n
// floats in one pass, and the same pass also writing dy/dx. Each launches on the default stream
// and returns the launch's status.

#include <cstddef>

#include <cuda_runtime_api.h>

cudaError_t hand_chain_forward(const float* x, float* y, std::size_t n);
cudaError_t hand_chain_forward_backward(const float* x, float* y, float* dx, std::size_t n);
