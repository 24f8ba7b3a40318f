#pragma once
/// \file Where a kind of work runs: the one place that asks where tensors live and hands an
/// elementwise pass or a reduction to the host evaluator or the device evaluator.

#include <algorithm>
#include <memory>

#include "device_hooks.hpp"
#include "host_reduce.hpp"

namespace fusegrad::dispatch {

/// The device every leaf of e lives on; throws device_error naming both when they differ.
template <class E>
fg::device common_device(const E& e) {
  fg::device d = default_device();
  bool first = true;
  expr::for_each_leaf(e, [&](const auto& l) FG_INLINE {
    const fg::device ld = l.value.device();
    if (first) d = ld;
    FG_CHECK(ld == d, device_error, "fusegrad: operands of one expression live on ", d.str(), " and ", ld.str(),
             "; move one with .gpu() or .cpu() (fusegrad never copies between devices silently)");
    first = false;
  });
  return d;
}

/// Evaluates e over `out` into dst on device d (host or device evaluator).
template <class E, class T>
void run_elementwise(const E& e, const fg::shape& out, fg::device d, T* dst) {
  if (d.is_gpu()) return device_eval::evaluate(e, out, d, dst);
  host::evaluate_host(e, out, dst);
}

/// Reduces e, broadcast over `iter`, with reducer R into dst of shape `keep` (iter's rank, 1 on
/// reduced axes); floating results are divided by `divisor` as they are written (a mean).
template <class R, class E, class T>
void run_reduction(const E& e, const fg::shape& iter, const fg::shape& keep, fg::device d, T* dst, T divisor = T(1)) {
  if (d.is_gpu()) return device_eval::reduce<R>(e, iter, keep, d, dst, divisor);
  // Not std::vector: its bool specialisation has no data().
  const std::size_t n = keep.elements();
  std::unique_ptr<typename R::acc[]> acc(new typename R::acc[n]);
  std::fill(acc.get(), acc.get() + n, R::identity());
  host::reduce_host<R>(e, iter, keep, acc.get());
  if (divisor == T(1)) std::copy(acc.get(), acc.get() + n, dst);
  else
    for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<T>(static_cast<T>(acc[i]) / divisor);
}

/// e evaluated over shape s into a new tensor on device d, in one elementwise pass. Never
/// recorded, like unrecorded_sum_to below.
template <class E, class T = typename E::value_type>
tensor<T> unrecorded_evaluate(const E& e, const fg::shape& s, fg::device d) {
  tensor<T> r(s, d);
  run_elementwise(e, s, d, r.buffer()->data);
  return r;
}

/// e broadcast over `iter` into a new tensor of shape `target` on device d: one elementwise pass
/// when target has iter's elements, else the sum over the axes iter broadcasts target along
/// (target a shape that broadcasts to iter). Never recorded: what the floors above use for
/// values no gradient flows through, or whose recording they do themselves.
template <class E, class T = typename E::value_type>
tensor<T> unrecorded_sum_to(const E& e, const fg::shape& iter, const fg::shape& target, fg::device d) {
  tensor<T> r(target, d);
  if (target.elements() == iter.elements()) run_elementwise(e, iter, d, r.buffer()->data);
  else run_reduction<ops::sum_reducer<T>>(e, iter, core::padded_to_rank(target, iter.rank()), d, r.buffer()->data);
  return r;
}
}  // namespace fusegrad::dispatch
