#pragma once
/// \file Matrix products on the device: cuBLAS for float and double under CUDA, OpenBLAS on the
/// (host) memory of "/gpu:0" under a host Thrust system (Note [device systems]), and one Thrust
/// transform over the outputs for integer types on every system.

// First: it configures Thrust before any Thrust header is read.
#include "device_runtime.hpp"

#include <cstddef>
#include <type_traits>

#include <thrust/fill.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/transform.h>

#include "../core/config.hpp"

#if THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_CUDA
#include <fusegrad/cuda/blas.hpp>
#else
#include <cblas.h>
#endif

namespace fusegrad::device_eval {

/// Element (batch, i, j) of the batched row-major product op(A) op(B), summed over k.
template <class T>
struct product_element {
  const T* a;
  const T* b;
  index_t m, n, k, step_a, step_b;
  bool ta, tb;
  FG_HD T operator()(index_t e) const {
    const index_t j = e % n, i = (e / n) % m, p = e / (m * n);
    const T* pa = a + p * step_a;
    const T* pb = b + p * step_b;
    T acc = 0;
    for (index_t q = 0; q < k; ++q) acc += (ta ? pa[q * m + i] : pa[i * k + q]) * (tb ? pb[j * k + q] : pb[q * n + j]);
    return acc;
  }
};

/// `batch` row-major products C_p = op(A_p) op(B_p) on device d (A_p m x k and B_p k x n after
/// op; A_p starts step_a elements after A_{p-1}, 0 reusing one matrix for every product).
template <class T>
void gemm(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, std::size_t batch, const T* a,
          std::size_t step_a, const T* b, std::size_t step_b, T* c, fg::device d) {
  const std::size_t outputs = batch * m * n;
  if (outputs == 0) return;
  device_guard g(d);
  if (k == 0) {
    checked("fg::matmul", d, [&] { thrust::fill_n(launch_policy(), c, outputs, T(0)); });
    return;
  }
  if constexpr (std::is_floating_point_v<T>) {
#if THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_CUDA
    cuda::gemm_batched<T>(ta, tb, m, n, k, batch, a, step_a, b, step_b, c, d);
#else
    // "/gpu:0" memory is host memory here: BLAS reads it in place (Note [device systems]).
    const auto ca = ta ? CblasTrans : CblasNoTrans, cb = tb ? CblasTrans : CblasNoTrans;
    const auto im = static_cast<blasint>(m), in = static_cast<blasint>(n), ik = static_cast<blasint>(k);
    const auto lda = static_cast<blasint>(ta ? m : k), ldb = static_cast<blasint>(tb ? k : n);
    for (std::size_t p = 0; p < batch; ++p) {
      if constexpr (std::is_same_v<T, float>)
        cblas_sgemm(CblasRowMajor, ca, cb, im, in, ik, 1.0f, a + p * step_a, lda, b + p * step_b, ldb, 0.0f,
                    c + p * m * n, in);
      else
        cblas_dgemm(CblasRowMajor, ca, cb, im, in, ik, 1.0, a + p * step_a, lda, b + p * step_b, ldb, 0.0,
                    c + p * m * n, in);
    }
#endif
  } else {
    const thrust::counting_iterator<index_t> first(0);
    const product_element<T> f{a, b, static_cast<index_t>(m), static_cast<index_t>(n), static_cast<index_t>(k),
                               static_cast<index_t>(step_a), static_cast<index_t>(step_b), ta, tb};
    checked("fg::matmul", d, [&] {
      thrust::transform(launch_policy(), first, first + static_cast<index_t>(outputs), c, f);
    });
  }
}
}  // namespace fusegrad::device_eval
