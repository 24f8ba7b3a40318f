#pragma once
/// \file Compile-time differentiation of an expression tree.
/// Note [fused backward]: an expression's leaves are numbered depth-first ("positions"); the
/// same tensor may stand at several positions (x * x). position_grads walks the tree once and
/// yields, per position, the expression of d(output)/d(leaf) applied to the upstream gradient,
/// built from each op's vjp rule. What is compiled per expression from it is the derivative of
/// a loss computed in its forward pass (Note [saved derivative], eager/saved_derivative.hpp);
/// every other backward step runs the same rules from the expression's program (Note
/// [programs], expr/program.hpp).

#include <tuple>

#include "node.hpp"

namespace fusegrad::inline expr {
template <class G> struct is_zero_grad : std::is_same<G, zero_grad> {};

/// The vector-Jacobian product of node e's operand I for upstream gradient g. A function
/// rather than a lambda inside position_grads' pack expansion, which nvcc's front end rejects.
template <std::size_t I, class E, class G>
auto operand_vjp(const E& e, const G& g) {
  if constexpr (is_zero_grad<G>::value) return zero_grad{};
  else return fg::core::apply([&](const auto&... a) { return e.op.template vjp<I>(g, a...); }, e.args);
}

/// Per-position gradient expressions of e for upstream gradient g (Note [fused backward]).
/// S is the tree whose leaves number the positions: e itself, or a tree e was made from by
/// turning its leaves into literal-like leaves (an alias tree, Note [saved derivative]).
template <class S, class E, class G>
auto position_grads_as(const E& e, const G& g) {
  if constexpr (is_literal<S>::value) {
    return std::tuple<>{};
  } else if constexpr (is_leaf<S>::value) {
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

/// True when G is a (nonzero) gradient expression of element type T.
template <class T, class G> constexpr bool grad_of_type() {
  if constexpr (is_zero_grad<G>::value) return false;
  else return std::is_same_v<typename G::value_type, T>;
}

/// The number of positions of a position_grads tuple that carry a gradient of type T.
template <class T, class Tuple, std::size_t... P>
constexpr std::size_t count_positions(std::index_sequence<P...>) {
  return (std::size_t{0} + ... + (grad_of_type<T, std::tuple_element_t<P, Tuple>>() ? 1 : 0));
}
}  // namespace fusegrad::expr
