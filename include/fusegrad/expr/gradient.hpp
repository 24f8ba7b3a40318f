#pragma once
/// \file Compile-time differentiation of an expression tree.
/// Note [fused backward]: an expression's leaves are numbered depth-first ("positions"); the
/// same tensor may stand at several positions (x * x). position_grads walks the tree once and
/// yields, per position, the expression of d(output)/d(leaf) applied to the upstream gradient,
/// built from each op's vjp rule. The gradient of a distinct input is then ONE expression: the
/// sum over its positions, each behind a gate switched on at run time when that position holds
/// the input. Evaluating it is one fused pass; since it is built from fusegrad ops it is itself
/// recordable, which is what makes higher-order gradients work.

#include <array>
#include <tuple>

#include "../ops/binary.hpp"

namespace fusegrad {
namespace ops {
/// Passes its operand through when on, else zero; keeps one pass per input in fused backward.
struct gate_op : detail::op_traits {
  static constexpr const char* name = "gate";
  static constexpr bool arithmetic_only = false;
  bool on = true;
  // A batch goes through select with a broadcast mask: GCC 12 at -O3 with AVX-512 compiles
  // `on ? x : V(0)` on an xsimd batch into a masked move whose mask is the bool itself, keeping
  // lane 0 only.
  template <class V> FG_HD V operator()(V x) const {
    if constexpr (std::is_arithmetic_v<V>) return on ? x : V(0);
    else return select(typename V::batch_bool_type(on), x, V(0));
  }
  template <std::size_t, class G, class X> auto vjp(const G& g, const X&) const {
    return expr::node<gate_op, detail::operand_t<G>>(*this, detail::to_operand(g));
  }
};

/// Marks the upstream gradient inside a fused backward expression; passes it through. Leaves
/// outside such markers are the recorded expression's own, which lets the host evaluator see
/// when they all read one buffer (Note [aliased leaves], eval/host.hpp).
struct upstream_op : detail::op_traits {
  static constexpr const char* name = "upstream";
  static constexpr bool arithmetic_only = false;
  template <class V> FG_HD V operator()(V x) const { return x; }
  template <std::size_t, class G, class X> static G vjp(const G& g, const X&) { return g; }
};
}  // namespace ops

namespace detail {
template <class G> struct is_zero_grad : std::is_same<G, zero_grad> {};

/// The vector-Jacobian product of node e's operand I for upstream gradient g. A function
/// rather than a lambda inside position_grads' pack expansion, which nvcc's front end rejects.
template <std::size_t I, class E, class G>
auto operand_vjp(const E& e, const G& g) {
  if constexpr (is_zero_grad<G>::value) return zero_grad{};
  else return fg::detail::apply([&](const auto&... a) { return e.op.template vjp<I>(g, a...); }, e.args);
}

/// Per-position gradient expressions of e for upstream gradient g (Note [fused backward]).
/// S is the tree whose leaves number the positions: e itself, or the expression e was made
/// from by turning its leaves into literals (a scalar entry, Note [scalar entries]).
template <class S, class E, class G>
auto position_grads_as(const E& e, const G& g) {
  if constexpr (expr::is_literal<S>::value) {
    return std::tuple<>{};
  } else if constexpr (expr::is_leaf<S>::value) {
    if constexpr (std::is_floating_point_v<typename S::value_type> && !is_zero_grad<G>::value)
      return std::tuple<G>{g};
    else
      return std::tuple<zero_grad>{};
  } else {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::tuple_cat(
          position_grads_as<std::tuple_element_t<I, decltype(S::args)>>(std::get<I>(e.args), operand_vjp<I>(e, g))...);
    }(std::make_index_sequence<std::tuple_size_v<decltype(e.args)>>{});
  }
}

template <class E, class G>
auto position_grads(const E& e, const G& g) {
  return position_grads_as<E>(e, g);
}

struct no_sum {};

template <class T, class G> constexpr bool grad_of_type() {
  if constexpr (is_zero_grad<G>::value) return false;
  else return std::is_same_v<typename G::value_type, T>;
}

template <class T, class Tuple, std::size_t... P>
constexpr std::size_t count_positions(std::index_sequence<P...>) {
  return (std::size_t{0} + ... + (grad_of_type<T, std::tuple_element_t<P, Tuple>>() ? 1 : 0));
}

/// acc plus the gradients of type T at positions P onwards, left to right; with Gate, each
/// behind a gate switched by on[position].
template <class T, bool Gate, std::size_t P, class Tuple, class Acc>
auto gated_sum_from(const Tuple& pg, const bool* on, const Acc& acc) {
  if constexpr (P == std::tuple_size_v<Tuple>) {
    return acc;
  } else {
    using G = std::tuple_element_t<P, Tuple>;
    if constexpr (!grad_of_type<T, G>()) {
      return gated_sum_from<T, Gate, P + 1>(pg, on, acc);
    } else {
      auto term = [&] {
        if constexpr (Gate) return expr::node<ops::gate_op, operand_t<G>>(ops::gate_op{{}, on[P]}, to_operand(std::get<P>(pg)));
        else return to_operand(std::get<P>(pg));
      }();
      if constexpr (std::is_same_v<Acc, no_sum>) return gated_sum_from<T, Gate, P + 1>(pg, on, term);
      else return gated_sum_from<T, Gate, P + 1>(pg, on, acc + term);
    }
  }
}

/// The sum of all position gradients of type T, without gates: the gradient of the one input
/// that stands at every position (Note [saved derivative] in expr/evaluate.hpp). Call only
/// when some position carries one.
template <class T, class Tuple>
auto position_sum(const Tuple& pg) {
  return gated_sum_from<T, false, 0>(pg, nullptr, no_sum{});
}

/// Which positions of a position_grads tuple carry a (nonzero) gradient of type T.
template <class T, class Tuple>
constexpr auto carrying_positions() {
  return [&]<std::size_t... P>(std::index_sequence<P...>) {
    return std::array<bool, sizeof...(P)>{grad_of_type<T, std::tuple_element_t<P, Tuple>>()...};
  }(std::make_index_sequence<std::tuple_size_v<Tuple>>{});
}

/// True when the input flagged in `on` stands at some position that carries a gradient.
template <class T, class Tuple>
bool has_gradient(const bool* on) {
  constexpr auto carry = carrying_positions<T, Tuple>();
  for (std::size_t p = 0; p < carry.size(); ++p)
    if (carry[p] && on[p]) return true;
  return false;
}

/// The gradient expression of the input whose positions are flagged in `on`, for inputs of
/// type T (call only when has_gradient). With a single carrying position there is nothing to
/// gate: that position is the input's.
template <class T, class Tuple>
auto gated_sum(const Tuple& pg, const bool* on) {
  constexpr std::size_t n = std::tuple_size_v<Tuple>;
  if constexpr (count_positions<T, Tuple>(std::make_index_sequence<n>{}) == 1) {
    return [&]<std::size_t... P>(std::index_sequence<P...>) {
      constexpr std::size_t idx = ((grad_of_type<T, std::tuple_element_t<P, Tuple>>() ? P : 0) + ...);
      return std::get<idx>(pg);
    }(std::make_index_sequence<n>{});
  } else {
    return gated_sum_from<T, true, 0>(pg, on, no_sum{});
  }
}
}  // namespace detail
}  // namespace fusegrad
