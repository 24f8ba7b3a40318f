#pragma once
/// \file The definition of host::sgemm, which eval/host_linalg.hpp declares: float32 products
/// through oneDNN's dnnl_sgemm. Included by eval/host_linalg.hpp in header-only use; with
/// FUSEGRAD_SEPARATE_ENGINES only the compiled library's src/gemm.cpp includes it, so no other
/// unit sees <dnnl.h>.
///
/// Note [float32 products]: float32 matmul runs on oneDNN's sgemm, float64 on OpenBLAS (oneDNN
/// has no double GEMM). Both libraries are dependencies already (oneDNN for conv2d), and on the
/// MLP step's seven products (784-256-256-10, batch 128; benchmarks/gemm_engines.cpp, each
/// engine in a process of its own) oneDNN 2.6 was as fast or faster everywhere it was measured:
/// 1.08x OpenBLAS 0.3.21 on the project's 2-core AMD EPYC on one thread and 1.08 to 1.5x on two,
/// and 2.5 to 5.4x on a 16-core Intel Xeon, for which that OpenBLAS has no kernel of its own
/// (24 to 31 GFLOP/s against 76 to 161). An MLP epoch on that Xeon took 0.72 s instead of
/// 2.84 s. oneDNN's threads follow the intra-op setting (Note [thread count followers]).

#include <cstddef>
#include <dnnl.h>
#include <stdexcept>

#include "../core/error.hpp"
#include "host_linalg.hpp"
#include "host_openmp.hpp"

namespace fusegrad::host {
FG_ENGINES_INLINE void sgemm(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, const float* a,
                             const float* b, float* c) {
  onednn::follow_threads();
  const auto dm = static_cast<dnnl_dim_t>(m), dn = static_cast<dnnl_dim_t>(n), dk = static_cast<dnnl_dim_t>(k);
  const dnnl_status_t s =
      dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', dm, dn, dk, 1.0f, a, ta ? dm : dk, b, tb ? dk : dn, 0.0f, c, dn);
  if (s != dnnl_success)
    throw std::runtime_error(core::cat("fg::matmul: oneDNN's sgemm failed (status ", static_cast<int>(s), ") on a ",
                                       m, " x ", k, " by ", k, " x ", n, " float32 product"));
}
}  // namespace fusegrad::host
