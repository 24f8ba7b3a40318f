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
/// and their costly parts are computed once per element (Note [costly subexpressions]). The entry keeps the derivative (one tensor of the summed shape), and its
/// backward step is the derivative itself for an upstream of 1, else upstream * derivative.
/// When a tape records the backward step (higher orders), the saved derivative, a constant to
/// that tape, would be wrong: the step then runs the program (Note [programs]). The vjp rules
/// are linear in the upstream gradient, so both give the same gradient up to rounding. Only
/// full sums save a derivative: this loop is the one backward code compiled per expression, and
/// losses are where it pays.

#include <array>
#include <memory>

#include "../autodiff/tape_state.hpp"
#include "../eval/host.hpp"
#include "../eval/host_reduce.hpp"
#include "../expr/gradient.hpp"
#include "../ops/binary.hpp"

namespace fusegrad::eager {
/// Note [costly subexpressions]: a kernel whose leaves are aliased (alias_kernel) and whose
/// literals are pooled (pooled_literal_kernel) computes the same value wherever a subtree of
/// one type stands in it, for its ops are stateless. The compiler merges repeated cheap
/// subtrees by itself, but not repeated transcendental ones once they nest (GCC 12 computes
/// log(1 + exp(x)) twice with xsimd's AVX-512 functions), so the loop of value and derivative does it: the
/// distinct such subtrees with a costly op at the top (ops' `costly`) are computed once per
/// element, children first, into a memo_access, from which every occurrence reads its value.
template <class... N> struct type_list {};
template <class L, class K> struct append_unique;
template <class... N, class K>
struct append_unique<type_list<N...>, K> {
  using type = std::conditional_t<(std::is_same_v<N, K> || ...), type_list<N...>, type_list<N..., K>>;
};

/// True when a kernel's value depends on the element index alone (Note [costly subexpressions]).
template <class K> struct pure_kernel : std::false_type {};
template <class T> struct pure_kernel<expr::alias_kernel<T>> : std::true_type {};
template <class T, std::size_t J> struct pure_kernel<expr::pooled_literal_kernel<T, J>> : std::true_type {};
template <class T> struct pure_kernel<expr::unit_kernel<T>> : std::true_type {};
template <class Op, class... K>
struct pure_kernel<expr::node_kernel<Op, K...>> : std::bool_constant<std::is_empty_v<Op> && (pure_kernel<K>::value && ...)> {};

/// The distinct pure kernels with a costly op at the top inside kernels K..., children first,
/// appended to list L.
template <class L, class... K> struct costly_nodes { using type = L; };
template <class L, class K0, class K1, class... K>
struct costly_nodes<L, K0, K1, K...> : costly_nodes<typename costly_nodes<L, K0>::type, K1, K...> {};
template <class L, class Op, class... K>
struct costly_nodes<L, expr::node_kernel<Op, K...>> {
  using kids = typename costly_nodes<L, K...>::type;
  using self = expr::node_kernel<Op, K...>;
  using type = std::conditional_t<Op::costly && pure_kernel<self>::value, typename append_unique<kids, self>::type, kids>;
};

/// An access that also holds the values of the kernels in list L at its element.
template <class A, class V, class L> struct memo_access;
template <class A, class V, class... N>
struct memo_access<A, V, type_list<N...>> : A {
  std::array<V, sizeof...(N)> values;
  template <class K> static constexpr bool holds = (std::is_same_v<K, N> || ...);
  template <class K> V memo() const {
    constexpr std::size_t j = [] {
      constexpr bool same[] = {std::is_same_v<K, N>...};
      std::size_t q = 0;
      while (!same[q]) ++q;
      return q;
    }();
    return values[j];
  }
};
}  // namespace fusegrad::eager
namespace fusegrad::inline expr::kdetail {
template <class A, class V, class L>
inline constexpr bool is_memo_access<fg::eager::memo_access<A, V, L>> = true;
}  // namespace fusegrad::expr::kdetail
namespace fusegrad::eager {

/// Access a with the values of the kernels in L computed, children first.
template <class V, class L, class A>
auto memoize(const A& a) {
  return [&]<class... N>(type_list<N...>) {
    memo_access<A, V, L> m{a, {}};
    if constexpr (sizeof...(N) > 0) {
      std::size_t j = 0;
      ((m.values[j++] = N{}.compute(m)), ...);
    }
    return m;
  }(L{});
}

/// Runs kernels k and dk, whose leaves all read one buffer (alias_kernel leaves) and whose
/// literals are pooled, over n elements: k's values into dst, dk's into dd, in one loop (Note
/// [saved derivative]), their costly subexpressions computed once (Note [costly subexpressions]).
template <class K, class DK, class T>
FG_FLATTEN void run_row_with_derivative(const K& k, const DK& dk, std::size_t n, T* dst, T* dd, const T* src,
                                        const T* pool) {
  using L = typename costly_nodes<type_list<>, K, DK>::type;
  std::size_t i = 0;
  using B = xsimd::batch<T>;
  constexpr std::size_t w = B::size;
  for (; i + w <= n; i += w) {
    const auto a = memoize<B, L>(host::batch_access<B>{static_cast<index_t>(i), src, pool});
    const B v = k.eval(a), d = dk.eval(a);
    v.store_unaligned(dst + i);
    d.store_unaligned(dd + i);
  }
  for (; i < n; ++i) {
    const auto a = memoize<T, L>(expr::flat_access{static_cast<index_t>(i), src, pool});
    const T v = k.eval(a), d = dk.eval(a);
    dst[i] = v;
    dd[i] = d;
  }
}


/// Evaluates the alias trees e and de (an expression and its derivative, Note [saved
/// derivative]) over `out` in one pass: their leaves read src, a buffer of
/// shape `out`, their pooled literals `pool`. e's values go into dst, or, with dst null, their
/// sum is added to *sum (in reduce_host's order: chunks folded into blocks, the blocks' sums
/// added in order, Note [parallel reductions]); de's into dd. Split across the intra-op threads
/// at block boundaries, as reduce_host is.
template <class E, class D, class T = typename E::value_type>
void evaluate_host_with_derivative(const E& e, const D& de, const fg::shape& out, const T* src, const T* pool,
                                   T* dst, typename ops::sum_reducer<T>::acc* sum, T* dd) {
  using R = ops::sum_reducer<T>;
  using A = typename R::acc;
  constexpr std::size_t block = host::detail::reduce_block, chunk = host::detail::reduce_chunk;
  ++fg::core::counters().passes;
  const auto k = expr::make_kernel(e, out);
  const auto dk = expr::make_kernel(de, out);
  const std::size_t n = out.elements();
  const std::size_t blocks = (n + block - 1) / block;
  if (dst) {
    core::parallel_for(blocks, n, [&](std::size_t b0, std::size_t b1) {
      const std::size_t begin = b0 * block, m = std::min(n, b1 * block) - begin;
      run_row_with_derivative(k, dk, m, dst + begin, dd + begin, src + begin, pool);
    });
    return;
  }
  // One block's sum goes straight into *sum; more are kept and added in order.
  std::unique_ptr<A[]> partial(blocks > 1 ? new A[blocks] : nullptr);
  core::parallel_for(blocks, n, [&](std::size_t b0, std::size_t b1) {
    alignas(64) T tmp[chunk];
    for (std::size_t b = b0; b < b1; ++b) {
      A acc = R::identity();
      for (std::size_t c = b * block; c < std::min(n, (b + 1) * block); c += chunk) {
        const std::size_t m = std::min(chunk, n - c);
        run_row_with_derivative(k, dk, m, tmp, dd + c, src + c, pool);
        acc = R::combine(acc, static_cast<A>(host::detail::fold_chunk<R>(tmp, m)));
      }
      if (partial) partial[b] = acc;
      else *sum = R::combine(*sum, acc);
    }
  });
  for (std::size_t b = 0; partial && b < blocks; ++b) *sum = R::combine(*sum, partial[b]);
}

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
tensor<T> sum_saving_derivative(const E& e, const fg::shape& iter, typename ops::sum_reducer<T>::acc* sum) {
  if constexpr (!may_save_derivative<E>()) {
    return {};
  } else {
    const std::size_t n = iter.elements();
    if (n < 2 || !autodiff::recording()) return {};
    const tensor<T>* x = nullptr;
    bool one = true;
    expr::for_each_leaf(e, [&](const auto& l) {
      one = one && l.value.shape() == iter && (x == nullptr || l.value.id() == x->id());
      x = &l.value;
    });
    if (!one || !x->device().is_cpu()) return {};
    const tensor_id id = x->id();
    if (!autodiff::any_tape_tracks(std::span<const tensor_id>(&id, 1))) return {};
    tensor<T> d(iter, fg::device::cpu());
    // Literals pooled, so that the copies of e's subexpressions inside the derivative read
    // the same values from the same addresses and are computed once (one slot more than
    // needed, so that the pool is never empty).
    std::array<T, expr::literal_count<E>::value + 1> pool;
    const auto ae = alias_tree<0>(e, pool.data());
    evaluate_host_with_derivative(ae, derivative_of<E>(ae, expr::unit_literal<T>{}), iter, x->data(),
                                        pool.data(), static_cast<T*>(nullptr), sum, d.buffer()->data);
    return d;
  }
}
}  // namespace fusegrad::eager
