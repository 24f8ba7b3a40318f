#pragma once
/// \file Recording of non-elementwise ops (reshape, reductions, matmul...): each gives its
/// backward as a function from the output's gradient to its inputs' gradients, written with
/// fusegrad ops so that it is itself recorded for higher orders.

#include <array>
#include <memory>

#include "tape_state.hpp"

namespace fusegrad::autodiff {

/// The backward step of a recorded op: f(g, needed) returns its inputs' gradients (a
/// std::array, or a std::vector for a run-time number of inputs), undefined where not needed.
template <class T, class F>
struct op_entry final : backward_fn {
  const char* op;
  F f;
  op_entry(const char* n, F fn) : op(n), f(std::move(fn)) {}
  const char* name() const noexcept override { return op; }
  void run(std::span<const any_grad> upstream, std::span<const bool> needed, std::span<any_grad> grads) override {
    const auto* g = std::get_if<tensor<T>>(&upstream[0]);
    if (!g) return;
    auto r = f(*g, needed);
    for (std::size_t i = 0; i < r.size() && i < grads.size(); ++i)
      if (needed[i] && r[i].defined()) grads[i] = std::move(r[i]);
  }
};

/// Records an op with inputs of element type T and one output, `out`. `backward(g, needed)` returns
/// the input gradients (undefined where not needed). Costs nothing when no tape on this thread
/// tracks an input, and nothing at all for non-floating T. Eager ops call it from their epilogue
/// (Note [eager epilogue]), after the numerics check.
template <class T, class F>
void record_op(const char* name, std::span<const tensor_id> inputs, const tensor<T>& out, F&& backward) {
  if constexpr (std::is_floating_point_v<T>) {
    if (!recording()) return;
    const tensor_id outs[1] = {out.id()};
    const slot_meta out_meta = meta_of(out);
    record(inputs, outs, &out_meta, [&] { return std::make_shared<op_entry<T, std::decay_t<F>>>(name, std::forward<F>(backward)); });
  }
}
/// record_op for N inputs given as an array.
template <class T, std::size_t N, class F>
void record_op(const char* name, const std::array<tensor_id, N>& inputs, const tensor<T>& out, F&& backward) {
  record_op<T>(name, std::span<const tensor_id>(inputs.data(), N), out, std::forward<F>(backward));
}
}  // namespace fusegrad::autodiff
