#pragma once
/// \file dispatch::run_gemm, the one entry point that runs a batch of matrix products
/// (ops::gemm_request) where its operands live: on the host through the host evaluator's gemm
/// (eval/host_linalg.hpp), or on a GPU through the device evaluator's (eval/device_linalg.hpp).

#include <cstddef>

#include "../ops/linalg_rules.hpp"
#include "device_hooks.hpp"
#include "host_linalg.hpp"

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
