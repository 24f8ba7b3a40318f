#pragma once
/// \file Note [saved derivative]: a backward step recomputes what its forward pass computed,
/// which costs little for arithmetic and as much as the forward pass again for transcendental
/// functions: sum(log(1 + exp(x)) * sigmoid(x) + x * x) takes three exponentials and a
/// logarithm per element forward, and again backward. So when a loss, a full sum on the host,
/// has a costly op (ops' `costly`: exp, log, sigmoid, tanh...) and reads at every leaf one
/// tensor that a recording tape tracks, of the summed shape, the forward pass also computes
/// the derivative of each element with respect to that tensor (the position gradients for an
/// upstream of 1, summed), in the same loop over the same loads. Both trees are evaluated as
/// alias trees (leaves load from the one buffer, literals read a pool, no tensors or shapes
/// inside), so the copies of a subexpression that the rules make are equal to the compiler,
/// and their costly parts are computed once per element (Note [costly subexpressions] in
/// eval/host.hpp). The entry keeps the derivative (one tensor of the summed shape), and its
/// backward step is the derivative itself for an upstream of 1, else upstream * derivative.
/// When a tape records the backward step (higher orders), the saved derivative, a constant to
/// that tape, would be wrong: the step then runs the program (Note [programs]). The vjp rules
/// are linear in the upstream gradient, so both give the same gradient up to rounding. Only
/// full sums save a derivative: this loop is the one backward code compiled per expression, and
/// losses are where it pays.

#include <array>

#include "../autodiff/tape_state.hpp"
#include "../eval/host_reduce.hpp"
#include "../expr/gradient.hpp"
#include "../ops/binary.hpp"

namespace fusegrad::detail {
template <class E> struct has_costly_op : std::false_type {};
template <class Op, class... A>
struct has_costly_op<expr::node<Op, A...>> : std::bool_constant<Op::costly || (has_costly_op<A>::value || ...)> {};

struct no_sum {};

/// acc plus the gradients of type T at positions P onwards, left to right.
template <class T, std::size_t P, class Tuple, class Acc>
auto position_sum_from(const Tuple& pg, const Acc& acc) {
  if constexpr (P == std::tuple_size_v<Tuple>) {
    return acc;
  } else {
    using G = std::tuple_element_t<P, Tuple>;
    if constexpr (!expr::grad_of_type<T, G>()) {
      return position_sum_from<T, P + 1>(pg, acc);
    } else {
      const auto& term = std::get<P>(pg);
      if constexpr (std::is_same_v<Acc, no_sum>) return position_sum_from<T, P + 1>(pg, term);
      else return position_sum_from<T, P + 1>(pg, acc + term);
    }
  }
}

/// The expression of the derivative of S (the tree e stands for) with respect to the tensor at
/// all its leaves, for upstream gradient `one` (a 1).
template <class S, class E, class One, class T = typename E::value_type>
auto derivative_of(const E& e, const One& one) {
  return position_sum_from<T, 0>(expr::position_grads_as<S>(e, one), no_sum{});
}

/// The number of literals in the operands before operand I of an argument tuple.
template <class Args, std::size_t I>
constexpr std::size_t literals_before() {
  return [&]<std::size_t... Q>(std::index_sequence<Q...>) {
    return (std::size_t{0} + ... + expr::literal_count<std::tuple_element_t<Q, Args>>::value);
  }(std::make_index_sequence<I>{});
}

/// The tree e stands for when all its leaves read one buffer: leaves become alias_leaf, and
/// the J-th literal, depth-first, pooled_literal<T, J> with its value in pool[J]. It holds no
/// tensors and no shapes.
template <std::size_t J, class E, class T>
auto alias_tree(const E& e, T* pool) {
  if constexpr (expr::is_literal<E>::value) {
    pool[J] = static_cast<T>(e.value);
    return expr::pooled_literal<typename E::value_type, J>{{e.value}};
  } else if constexpr (expr::is_leaf<E>::value) {
    return expr::alias_leaf<typename E::value_type>{};
  } else {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      using Args = decltype(E::args);
      using N = expr::node<typename E::op_type, decltype(alias_tree<J + literals_before<Args, I>()>(std::get<I>(e.args), pool))...>;
      return N(e.op, alias_tree<J + literals_before<Args, I>()>(std::get<I>(e.args), pool)...);
    }(std::make_index_sequence<std::tuple_size_v<decltype(E::args)>>{});
  }
}
template <class E, class T = typename E::value_type>
using alias_tree_t = decltype(alias_tree<0>(std::declval<const E&>(), static_cast<T*>(nullptr)));

/// True when a full sum of E may save its derivative. Define FUSEGRAD_NO_SAVED_DERIVATIVE to
/// turn it off: each such expression then compiles faster and its backward steps run the program.
template <class E>
constexpr bool may_save_derivative() {
  using T = typename E::value_type;
#ifdef FUSEGRAD_NO_SAVED_DERIVATIVE
  if constexpr (true) {
#else
  if constexpr (!std::is_floating_point_v<T> || !has_costly_op<E>::value || !host::detail::use_simd<E>()) {
#endif
    return false;
  } else {
    using PG = decltype(expr::position_grads(std::declval<const E&>(), expr::literal<T>{}));
    constexpr std::size_t n = std::tuple_size_v<PG>;
    if constexpr (expr::count_positions<T, PG>(std::make_index_sequence<n>{}) == 0) return false;
    else return host::detail::use_simd<decltype(derivative_of<E>(std::declval<const alias_tree_t<E>&>(), expr::unit_literal<T>{}))>();
  }
}

/// Sums e over `iter` on the host into *sum saving its derivative when e qualifies. Returns the
/// derivative, or an undefined tensor when e does not qualify (and then does nothing).
template <class E, class T = typename E::value_type>
tensor<T> sum_saving_derivative(const E& e, const fg::shape& iter, typename host::sum_reducer<T>::acc* sum) {
  if constexpr (!may_save_derivative<E>()) {
    return {};
  } else {
    const std::size_t n = iter.elements();
    if (n < 2 || !recording()) return {};
    const tensor<T>* x = nullptr;
    bool one = true;
    expr::for_each_leaf(e, [&](const auto& l) {
      one = one && l.value.shape() == iter && (x == nullptr || l.value.id() == x->id());
      x = &l.value;
    });
    if (!one || !x->device().is_cpu()) return {};
    const tensor_id id = x->id();
    if (!any_tape_tracks(std::span<const tensor_id>(&id, 1))) return {};
    tensor<T> d(iter, fg::device::cpu());
    // Literals pooled, so that the copies of e's subexpressions inside the derivative read
    // the same values from the same addresses and are computed once (one slot more than
    // needed, so that the pool is never empty).
    std::array<T, expr::literal_count<E>::value + 1> pool;
    const auto ae = alias_tree<0>(e, pool.data());
    host::evaluate_host_with_derivative(ae, derivative_of<E>(ae, expr::unit_literal<T>{}), iter, x->data(),
                                        pool.data(), static_cast<T*>(nullptr), sum, d.buffer()->data);
    return d;
  }
}
}  // namespace fusegrad::detail
