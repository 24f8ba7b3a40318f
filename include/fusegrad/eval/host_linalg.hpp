#pragma once
/// \file The host evaluator's matrix product: OpenBLAS for float and double, a plain loop for
/// integers. Run by dispatch::run_gemm (eval/linalg.hpp), and by the device evaluator's gemm on a
/// host Thrust system, where device memory is host memory (eval/device_linalg.hpp).

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include <cblas.h>

#include "../core/integer.hpp"

namespace fusegrad::host {
/// One product C (m x n) = op(A) op(B), row-major, where op transposes when the flag is set.
template <class T>
void gemm(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, const T* a, const T* b, T* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    std::fill(c, c + m * n, T(0));
    return;
  }
  const std::size_t lda = ta ? m : k, ldb = tb ? k : n;
  if constexpr (std::is_floating_point_v<T>) {
    const auto ca = ta ? CblasTrans : CblasNoTrans, cb = tb ? CblasTrans : CblasNoTrans;
    const auto im = static_cast<blasint>(m), in = static_cast<blasint>(n), ik = static_cast<blasint>(k);
    if constexpr (std::is_same_v<T, float>)
      cblas_sgemm(CblasRowMajor, ca, cb, im, in, ik, 1.0f, a, static_cast<blasint>(lda), b, static_cast<blasint>(ldb),
                  0.0f, c, in);
    else
      cblas_dgemm(CblasRowMajor, ca, cb, im, in, ik, 1.0, a, static_cast<blasint>(lda), b, static_cast<blasint>(ldb),
                  0.0, c, in);
  } else {  // signed integers: products and sums wrap around (Note [integer wraparound])
    std::fill(c, c + m * n, T(0));
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t p = 0; p < k; ++p) {
        const T av = ta ? a[p * lda + i] : a[i * lda + p];
        if (tb)
          for (std::size_t j = 0; j < n; ++j)
            c[i * n + j] = core::wrapping_add(c[i * n + j], core::wrapping_mul(av, b[j * ldb + p]));
        else
          for (std::size_t j = 0; j < n; ++j)
            c[i * n + j] = core::wrapping_add(c[i * n + j], core::wrapping_mul(av, b[p * ldb + j]));
      }
  }
}
}  // namespace fusegrad::host
