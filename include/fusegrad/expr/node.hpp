#pragma once
/// \file The typed lazy nodes of fusegrad's expression templates: leaves, literals and op nodes.
/// Note [expression capture]: a node holds its operands by value. A leaf holds a tensor, which
/// shares its immutable buffer, so an expression captures its operands' values when it is built
/// and can be stored, returned and evaluated later without dangling.

#include <tuple>
#include <type_traits>
#include <utility>

#include "../core/tensor.hpp"
#include "../core/fwd.hpp"

namespace fusegrad { inline namespace expr {

/// A tensor inside an expression.
template <class T>
struct leaf {
  using value_type = T;
  tensor<T> value;
  const fg::shape& shape() const noexcept { return value.shape(); }
};

/// A C++ scalar inside an expression, already converted to the expression's element type.
template <class T>
struct literal {
  using value_type = T;
  T value;
  const fg::shape& shape() const noexcept {
    static const fg::shape scalar;
    return scalar;
  }
};

/// A literal whose value lives in slot J of a pool the evaluator passes in (Note [saved
/// derivative] in eager/saved_derivative.hpp): every copy of it reads one address, so the compiler
/// sees that the copies are equal.
template <class T, std::size_t J>
struct pooled_literal : literal<T> {};

/// Stands for a leaf in a tree whose leaves all read one buffer, which the evaluator passes
/// in (Note [saved derivative]): no tensor and no shape, so that the derivative rules build
/// nodes over it as cheaply as over numbers. Its kernel is an alias_kernel.
template <class T>
struct alias_leaf : literal<T> {};

/// The literal 1 as a constant the compiler sees: the upstream gradient of a saved derivative
/// (Note [saved derivative]), so the rules' products with it cost nothing.
template <class T>
struct unit_literal : literal<T> {
  unit_literal() : literal<T>{T(1)} {}
};

/// Stands for operand J of a program op inside a block kernel (Note [programs] in
/// expr/program.hpp): it reads the J-th of the buffers the evaluator passes in. No tensor and
/// no shape, so the op's rules build nodes over it as cheaply as over numbers.
template <class T, std::size_t J>
struct slot_leaf : literal<T> {};
template <class T> struct is_slot : std::false_type {};
template <class T, std::size_t J> struct is_slot<slot_leaf<T, J>> : std::true_type {
  static constexpr std::size_t index = J;
};

/// Marks a derivative that is identically zero (comparisons, floor...): pruned at compile time.
struct zero_grad {};

template <class E> struct leaf_count;

/// The shape of a node over literals only, which is always the scalar shape: kept as no data.
struct scalar_shape {
  scalar_shape() = default;
  explicit scalar_shape(const fg::shape&) {}
  const fg::shape& get() const noexcept {
    static const fg::shape scalar;
    return scalar;
  }
};
struct stored_shape {
  fg::shape s;
  const fg::shape& get() const noexcept { return s; }
};

/// An op applied to operand expressions; its shape is their broadcast shape, checked when built.
/// A node over literals only (the derivative rules run on numbers, Note [scalar entries]) keeps
/// no shape and checks nothing: its shape is the scalar shape.
template <class Op, class... A>
struct node : node_base {
  using op_type = Op;
  using value_type = typename Op::template result<typename A::value_type...>;
  static constexpr bool literals_only = (leaf_count<A>::value + ... + 0) == 0;
  [[no_unique_address]] Op op;
  std::tuple<A...> args;
  [[no_unique_address]] std::conditional_t<literals_only, scalar_shape, stored_shape> shape_;

  node(Op o, A... a) : op(std::move(o)), args(std::move(a)...), shape_(shape_of(args)) {}
  node(Op o, std::tuple<A...> a, const fg::shape& s) : op(std::move(o)), args(std::move(a)), shape_{s} {}

  const fg::shape& shape() const noexcept { return shape_.get(); }

  /// Evaluates to its single element as a C++ value (`if (x > 0)`, `int(num % 3)`).
  explicit operator bool() const { return static_cast<bool>(tensor<value_type>(*this)); }
  template <class U>
    requires(std::is_arithmetic_v<U> && !std::same_as<U, bool>)
  explicit operator U() const { return static_cast<U>(tensor<value_type>(*this)); }

 private:
  static auto shape_of(const std::tuple<A...>& t) {
    if constexpr (literals_only) return scalar_shape{};
    else return stored_shape{fg::core::apply([](const auto&... x) { return broadcast(x...); }, t)};
  }
  template <class B0, class... B>
  static fg::shape broadcast(const B0& b0, const B&... b) {
    if constexpr (sizeof...(B) == 0) {
      return b0.shape();
    } else if constexpr (sizeof...(B) == 1) {
      // Scalars (literals, 0-d tensors) first: the common case, kept inline.
      const fg::shape& sa = b0.shape();
      const fg::shape& sb = (b.shape(), ...);
      if (sb.rank() == 0) return sa;
      if (sa.rank() == 0) return sb;
      return core::broadcast_shapes(sa, sb, Op::name);
    } else {
      fg::shape s = b0.shape();
      ((s = core::broadcast_shapes(s, b.shape(), Op::name)), ...);
      return s;
    }
  }
};

template <class T> struct is_leaf : std::false_type {};
template <class T> struct is_leaf<leaf<T>> : std::true_type {};
template <class T> struct is_literal : std::false_type {};
template <class T> struct is_literal<literal<T>> : std::true_type {};
template <class T, std::size_t J> struct is_literal<pooled_literal<T, J>> : std::true_type {};
template <class T> struct is_literal<alias_leaf<T>> : std::true_type {};
template <class T> struct is_literal<unit_literal<T>> : std::true_type {};
template <class T, std::size_t J> struct is_literal<slot_leaf<T, J>> : std::true_type {};

/// Anything that can stand inside an expression once converted (leaf, literal or node).
template <class E>
concept operand = is_leaf<E>::value || is_literal<E>::value || expression<E>;

/// Number of leaf positions (tensors) in an expression tree, counted with repeats.
template <class E> struct leaf_count : std::integral_constant<std::size_t, 0> {};
template <class T> struct leaf_count<leaf<T>> : std::integral_constant<std::size_t, 1> {};
template <class Op, class... A>
struct leaf_count<node<Op, A...>> : std::integral_constant<std::size_t, (leaf_count<A>::value + ... + 0)> {};

/// Number of literals in an expression tree.
template <class E> struct literal_count : std::integral_constant<std::size_t, is_literal<E>::value ? 1 : 0> {};
template <class Op, class... A>
struct literal_count<node<Op, A...>> : std::integral_constant<std::size_t, (literal_count<A>::value + ... + 0)> {};

/// Visits every leaf of e depth-first, left to right (the order of leaf positions).
template <class E, class F>
FG_INLINE inline void for_each_leaf(const E& e, F&& f);
template <class Tuple, class F, std::size_t... I>
FG_INLINE inline void for_each_leaf_in(const Tuple& t, F& f, std::index_sequence<I...>) {
  (for_each_leaf(std::get<I>(t), f), ...);
}
template <class E, class F>
FG_INLINE inline void for_each_leaf(const E& e, F&& f) {
  if constexpr (is_leaf<E>::value) f(e);
  else if constexpr (expression<E>)
    for_each_leaf_in(e.args, f, std::make_index_sequence<std::tuple_size_v<decltype(E::args)>>{});
}

/// True when every leaf and literal of E has element type F (the SIMD fast path's condition).
template <class E, class F> struct uniform_type : std::is_same<typename E::value_type, F> {};
template <class Op, class... A, class F>
struct uniform_type<node<Op, A...>, F>
    : std::bool_constant<(uniform_type<A, F>::value && ...) && Op::simd> {};
}  // namespace expr
}  // namespace fusegrad
