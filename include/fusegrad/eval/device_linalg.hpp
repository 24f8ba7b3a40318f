#pragma once
/// \file Matrix products on the device: cuBLAS for float and double under CUDA, OpenBLAS on the
/// (host) memory of "/gpu:0" under a host Thrust system (Note [device systems]), and one Thrust
/// transform over the outputs for integer types on every system.

#include <cstddef>
#include <type_traits>

#include "../core/config.hpp"
#include "device_launch.hpp"
#include "device_runtime.hpp"

#if FUSEGRAD_CUDA_SYSTEM
#include <fusegrad/cuda/blas.hpp>
#else
#include "host_linalg.hpp"
#endif

namespace fusegrad::device_eval {

/// `batch` row-major products C_p = op(A_p) op(B_p) on device d (A_p m x k and B_p k x n after
/// op; A_p starts step_a elements after A_{p-1}, 0 reusing one matrix for every product).
template <class T>
void gemm(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, std::size_t batch, const T* a,
          std::size_t step_a, const T* b, std::size_t step_b, T* c, fg::device d) {
  const std::size_t outputs = batch * m * n;
  if (outputs == 0) return;
  if (k == 0) return launch_fill(c, outputs, T(0), d);
  if constexpr (std::is_floating_point_v<T>) {
#if FUSEGRAD_CUDA_SYSTEM
    cuda::gemm_batched<T>(ta, tb, m, n, k, batch, a, step_a, b, step_b, c, d);
#else
    // "/gpu:0" memory is host memory here: the host's BLAS gemm reads it in place (Note [device
    // systems]).
    for (std::size_t p = 0; p < batch; ++p)
      host::gemm<T>(ta, tb, m, n, k, a + p * step_a, b + p * step_b, c + p * m * n);
#endif
  } else {
    const product_element<T> f{a, b, static_cast<index_t>(m), static_cast<index_t>(n), static_cast<index_t>(k),
                               static_cast<index_t>(step_a), static_cast<index_t>(step_b), ta, tb};
    launch_product(f, outputs, d, c);
  }
}
}  // namespace fusegrad::device_eval
