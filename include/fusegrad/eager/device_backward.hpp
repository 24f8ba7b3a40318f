#pragma once
/// \file Note [device backward]: on a device, a backward step replayed op by op (Note
/// [programs]) would launch a kernel per op and per vjp term. So with the device backend an
/// evaluation on a device records an entry that also keeps its expression, and when no tape
/// records its backward step, it computes each input's gradient as ONE fused expression: the
/// sum of the position gradients (Note [fused backward]) of the input's positions, each behind
/// a gate switched on at run time where that position holds the input, reduced over broadcast
/// axes in the same pass. This backward code is compiled per expression, but only in programs
/// built with FUSEGRAD_DEVICE; host programs run every backward step from programs.

#if defined(FUSEGRAD_DEVICE)

#include <array>

#include "../autodiff/program_entry.hpp"
#include "../eval/dispatch.hpp"
#include "../expr/gradient.hpp"
#include "../ops/binary.hpp"

namespace fusegrad::eager {

/// Passes its operand through when on, else zero (never recorded: device backward only).
struct gate_op : ops::op_traits {
  static constexpr const char* name = "gate";
  static constexpr bool arithmetic_only = false;
  bool on = true;
  // A batch goes through select with a broadcast mask: GCC 12 at -O3 with AVX-512 compiles
  // `on ? x : V(0)` on an xsimd batch into a masked move whose mask is the bool itself,
  // keeping lane 0 only.
  template <class V> FG_HD V operator()(V x) const {
    if constexpr (std::is_arithmetic_v<V>) return on ? x : V(0);
    else return select(typename V::batch_bool_type(on), x, V(0));
  }
};

/// acc plus the gradients of type T at positions P onwards, each behind a gate switched by on[P].
template <class T, std::size_t P, class Tuple, class Acc>
auto gated_sum_from(const Tuple& pg, const bool* on, const Acc& acc) {
  if constexpr (P == std::tuple_size_v<Tuple>) {
    return acc;
  } else {
    using G = std::tuple_element_t<P, Tuple>;
    if constexpr (!expr::grad_of_type<T, G>()) {
      return gated_sum_from<T, P + 1>(pg, on, acc);
    } else {
      auto term = expr::node<gate_op, ops::operand_t<G>>(gate_op{{}, on[P]}, ops::to_operand(std::get<P>(pg)));
      if constexpr (std::is_same_v<Acc, std::monostate>) return gated_sum_from<T, P + 1>(pg, on, term);
      else return gated_sum_from<T, P + 1>(pg, on, acc + term);
    }
  }
}

/// A fused entry that also keeps its expression, for its device backward (Note [device backward]).
template <class E>
struct device_fused_entry final : autodiff::fused_entry {
  static constexpr std::size_t L = expr::leaf_count<E>::value;
  E e;
  device_fused_entry(const expr::program& p, const E& ex) : autodiff::fused_entry(p), e(ex) {}

  void run(std::span<const autodiff::any_grad> upstream, std::span<const bool> needed,
           std::span<autodiff::any_grad> grads) override {
    using R = typename E::value_type;
    const auto* gp = std::get_if<tensor<R>>(&upstream[0]);
    if (!gp || gp->device().is_cpu() || records(*gp)) return fused_entry::run(upstream, needed, grads);
    const tensor<R> g = gp->shape() == gshape ? *gp : tensor<R>(gp->buffer(), gshape, gp->id());
    const auto pg = expr::position_grads(e, expr::leaf<R>{g});
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      if (!needed[k]) continue;
      std::array<bool, L> on{};
      for (std::size_t q = 0; q < L; ++q) on[q] = input_of[q] == k;
      if (inputs[k].type == dtype::float32) grads[k] = input_grad<float>(pg, on.data(), k, g.device());
      else grads[k] = input_grad<double>(pg, on.data(), k, g.device());
    }
  }

 private:
  template <class T, class PG>
  autodiff::any_grad input_grad(const PG& pg, const bool* on, std::size_t k, fg::device d) {
    constexpr std::size_t n = std::tuple_size_v<PG>;
    if constexpr (expr::count_positions<T, PG>(std::make_index_sequence<n>{}) == 0) {
      return {};
    } else {
      return dispatch::unrecorded_sum_to(gated_sum_from<T, 0>(pg, on, std::monostate{}), iter, inputs[k].shape, d);
    }
  }
};
}  // namespace fusegrad::eager

#endif
