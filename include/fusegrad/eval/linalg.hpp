#pragma once
/// \file Matrix products: the host evaluator's gemm (OpenBLAS for float and double, a plain loop
/// for integers) and dispatch::run_gemm, the one entry point that runs a batch of products
/// (ops::gemm_request) where its operands live: on the host, or on a GPU through the device
/// evaluator's gemm (eval/device_linalg.hpp).

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include <cblas.h>

#include "../core/integer.hpp"
#include "../ops/linalg_rules.hpp"
#include "device_hooks.hpp"

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

namespace fusegrad::dispatch {
/// Runs the products r describes on operands a and b into c, all on device d.
template <class T>
void run_gemm(const ops::gemm_request& r, const T* a, const T* b, T* c, fg::device d) {
  if (d.is_gpu())
    return device_eval::gemm<T>(r.ta, r.tb, r.m, r.n, r.k, r.batch, a, r.step_a, b, r.step_b, c, d);
  for (std::size_t i = 0; i < r.batch; ++i)
    host::gemm<T>(r.ta, r.tb, r.m, r.n, r.k, a + i * r.step_a, b + i * r.step_b, c + i * r.m * r.n);
}
}  // namespace fusegrad::dispatch
