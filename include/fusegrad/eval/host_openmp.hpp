#pragma once
/// \file oneDNN's thread count: host::onednn::follow_threads, called before each oneDNN call
/// (the convolutions of eval/host_dnnl.hpp, the float32 products of eval/host_sgemm.hpp).

#include "../core/parallel.hpp"

// Note [thread count followers], oneDNN: Debian's oneDNN runs its primitives on OpenMP, whose
// thread count belongs to each calling thread (omp_set_num_threads). follow_threads() sets the
// calling thread's count to core::intra_op_threads() before each execution. The two entry
// points are weak references: libgomp is loaded as oneDNN's own dependency, so a program links
// neither it nor -fopenmp, and with another OpenMP (or none) the calls are skipped. The
// declarations match <omp.h>'s, which may come before or after this header.
extern "C" {
__attribute__((weak)) int omp_get_max_threads() noexcept;
__attribute__((weak)) void omp_set_num_threads(int) noexcept;
}

namespace fusegrad::host::onednn {
/// Sets the calling thread's OpenMP thread count, which oneDNN reads, to fusegrad's intra-op
/// count (Note [thread count followers]).
inline void follow_threads() {
  if (omp_get_max_threads == nullptr || omp_set_num_threads == nullptr) return;
  const int n = core::intra_op_threads();
  if (omp_get_max_threads() != n) omp_set_num_threads(n);
}
}  // namespace fusegrad::host::onednn
