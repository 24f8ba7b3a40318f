#pragma once
/// \file The host evaluator's matrix product: oneDNN's sgemm for float (host::sgemm, declared
/// here and defined in eval/host_sgemm.hpp; Note [float32 products]), OpenBLAS for double, a
/// plain loop for integers. Run by dispatch::run_gemm (eval/linalg.hpp), and by the device
/// evaluator's gemm on a host Thrust system, where device memory is host memory
/// (eval/device_linalg.hpp).

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include <cblas.h>

#include "../core/config.hpp"
#include "../core/integer.hpp"

namespace fusegrad::host {
/// C (m x n) = op(A) op(B) in float32 through oneDNN (Note [float32 products]); not a template,
/// so that in package mode only libfusegrad calls oneDNN (FG_ENGINES_INLINE, core/config.hpp).
FG_ENGINES_INLINE void sgemm(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, const float* a,
                             const float* b, float* c);

/// One product C (m x n) = op(A) op(B), row-major, where op transposes when the flag is set.
template <class T>
void gemm(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, const T* a, const T* b, T* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    std::fill(c, c + m * n, T(0));
    return;
  }
  const std::size_t lda = ta ? m : k, ldb = tb ? k : n;
  if constexpr (std::is_same_v<T, float>) {
    sgemm(ta, tb, m, n, k, a, b, c);
  } else if constexpr (std::is_same_v<T, double>) {
    const auto ca = ta ? CblasTrans : CblasNoTrans, cb = tb ? CblasTrans : CblasNoTrans;
    const auto in = static_cast<blasint>(n);
    cblas_dgemm(CblasRowMajor, ca, cb, static_cast<blasint>(m), in, static_cast<blasint>(k), 1.0, a,
                static_cast<blasint>(lda), b, static_cast<blasint>(ldb), 0.0, c, in);
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

#if !defined(FUSEGRAD_SEPARATE_ENGINES)
#include "host_sgemm.hpp"
#endif
