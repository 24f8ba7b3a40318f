#pragma once
/// \file cuBLAS glue: checked calls, one handle per GPU and thread, and the row-major batched
/// product fg::matmul runs on the device for float and double.

#include <array>
#include <climits>
#include <cstddef>
#include <type_traits>

#include <cublas_v2.h>

#include "runtime.hpp"

namespace fusegrad::cuda {

/// Throws fg::device_error naming the call and cuBLAS's status unless it succeeded
/// (fg::out_of_memory for an allocation failure).
inline void check_blas(cublasStatus_t status, const char* call, fg::device d) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  if (status == CUBLAS_STATUS_ALLOC_FAILED)
    throw out_of_memory(fg::core::cat("fusegrad: ", call, " on ", d.str(), " could not allocate its workspace"));
  throw device_error(fg::core::cat("fusegrad: ", call, " on ", d.str(), " failed: ", cublasGetStatusName(status),
                                   " (", cublasGetStatusString(status), ")"));
}

/// This thread's cuBLAS handle for GPU d, made on first use. Note [blas handles]: handles are
/// kept until the process ends rather than destroyed at thread exit, because destroying one
/// after the CUDA runtime has shut down is an error; a handle per thread needs no locking.
inline cublasHandle_t blas_handle(fg::device d) {
  thread_local std::array<cublasHandle_t, 64> handles{};
  FG_CHECK(d.index >= 0 && d.index < static_cast<int>(handles.size()), device_error, "fusegrad: ", d.str(),
           " is beyond the ", handles.size(), " GPUs fusegrad's cuBLAS glue supports");
  cublasHandle_t& h = handles[static_cast<std::size_t>(d.index)];
  if (!h) check_blas(cublasCreate(&h), "cublasCreate", d);
  return h;
}

/// C = op(A) op(B) for `batch` row-major products on GPU d (A m x k, B k x n after op; a step
/// of 0 reuses one matrix for every product). cuBLAS is column-major, so it computes
/// C^T = op(B)^T op(A)^T, which is the same memory.
template <class T>
void gemm_batched(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, std::size_t batch, const T* a,
                  std::size_t step_a, const T* b, std::size_t step_b, T* c, fg::device d) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "cuBLAS products are float or double");
  FG_CHECK(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX && batch <= INT_MAX, shape_error,
           "fg::matmul: dimensions exceed what cuBLAS indexes (", INT_MAX, ")");
  device_guard g(d);
  cublasHandle_t h = blas_handle(d);
  const int im = static_cast<int>(m), in = static_cast<int>(n), ik = static_cast<int>(k);
  const int lda = static_cast<int>(ta ? m : k), ldb = static_cast<int>(tb ? k : n);
  const cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const auto sa = static_cast<long long>(step_a), sb = static_cast<long long>(step_b);
  const auto sc = static_cast<long long>(m * n);
  const T one = 1, zero = 0;
  if constexpr (std::is_same_v<T, float>)
    check_blas(cublasSgemmStridedBatched(h, ob, oa, in, im, ik, &one, b, ldb, sb, a, lda, sa, &zero, c, in, sc,
                                         static_cast<int>(batch)),
               "cublasSgemmStridedBatched", d);
  else
    check_blas(cublasDgemmStridedBatched(h, ob, oa, in, im, ik, &one, b, ldb, sb, a, lda, sa, &zero, c, in, sc,
                                         static_cast<int>(batch)),
               "cublasDgemmStridedBatched", d);
}
}  // namespace fusegrad::cuda
