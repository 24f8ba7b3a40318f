#pragma once
/// \file What every op family uses: turning tensors, variables and scalars into expression
/// operands, the element-type rules (with their compile-time messages), and node construction.

#include <concepts>
#include <type_traits>

#include "../core/integer.hpp"
#include "../expr/node.hpp"

namespace fusegrad {

namespace ops {
template <class X> struct is_tensor : std::false_type {};
template <class T> struct is_tensor<tensor<T>> : std::true_type {};
template <class X> struct is_variable : std::false_type {};
template <class T> struct is_variable<variable<T>> : std::true_type {};
}  // namespace ops

/// A tensor, a variable, or a lazy expression: anything fusegrad's ops take as a tensor operand.
template <class X>
concept tensor_like = ops::is_tensor<std::remove_cvref_t<X>>::value ||
                      ops::is_variable<std::remove_cvref_t<X>>::value ||
                      expr::operand<std::remove_cvref_t<X>>;

/// A C++ arithmetic scalar, which takes the element type of the tensor it meets.
template <class X>
concept scalar_like = std::is_arithmetic_v<std::remove_cvref_t<X>>;

/// The element type of a tensor-like X.
template <tensor_like X>
using value_type_of = typename std::remove_cvref_t<X>::value_type;

/// Evaluates an expression now (tensors are returned as they are, variables read); defined in
/// eager/evaluate.hpp.
template <tensor_like X>
tensor<value_type_of<X>> eval(const X& x);

namespace ops {
template <class T> expr::leaf<T> to_operand(const tensor<T>& t) {
  FG_CHECK(t.defined(), value_error,
           "fusegrad: an undefined tensor (a moved-from tensor or an unconnected gradient) cannot be used in an op");
  return {t};
}
template <class T> expr::leaf<T> to_operand(const variable<T>& v);  // autodiff/variable.hpp
template <expr::operand E> const E& to_operand(const E& e) { return e; }

template <class X> using operand_t = std::remove_cvref_t<decltype(to_operand(std::declval<const X&>()))>;

/// Checks at compile time that a C++ scalar S may meet a tensor of T (TensorFlow's TypeError).
template <class T, class S>
constexpr void check_scalar() {
  static_assert(!(std::floating_point<S> && !std::floating_point<T>),
                "fusegrad: a floating-point C++ scalar cannot combine with an integer or bool tensor "
                "(TensorFlow raises TypeError); use an integer scalar or fg::cast<float>(x)");
}

/// Converts x to an operand of element type T: scalars become literals; an integer scalar that
/// does not fit T, or an undefined tensor, throws, naming `op` (Note [integer scalars], Note
/// [moved-from objects]).
template <class T, class X>
auto operand_as(const X& x, const char* op) {
  if constexpr (scalar_like<X>) {
    check_scalar<T, X>();
    return expr::literal<T>{core::checked_integer<T>(x, op)};
  } else {
    if constexpr (is_tensor<X>::value)
      FG_CHECK(x.defined(), value_error, "fg::", op,
               ": an operand is an undefined tensor (a moved-from tensor or an unconnected gradient)");
    return to_operand(x);
  }
}

template <class A, class B> struct common_value {
  using type = typename std::conditional_t<scalar_like<A>, std::remove_cvref_t<B>, std::remove_cvref_t<A>>::value_type;
};

/// Builds Op(a) after checking Op's element-type requirement.
template <class Op, class A>
auto make_unary(const A& a, Op op = {}) {
  using T = value_type_of<A>;
  static_assert(!Op::floating_only || std::floating_point<T>,
                "fusegrad: this op needs a floating-point tensor (float or double); convert with fg::cast<float>(x)");
  static_assert(!Op::arithmetic_only || !std::same_as<T, bool>,
                "fusegrad: arithmetic on a bool tensor; convert with fg::cast<float>(x) or fg::cast<int32_t>(x)");
  return expr::node<Op, operand_t<A>>(op, operand_as<T>(a, Op::name));
}

/// Builds Op(a, b) where either side may be a C++ scalar; both tensors must share one element type.
template <class Op, class A, class B>
auto make_binary(const A& a, const B& b, Op op = {}) {
  static_assert(!(scalar_like<A> && scalar_like<B>), "fusegrad: an op needs at least one tensor operand");
  using T = typename common_value<A, B>::type;
  if constexpr (!scalar_like<A> && !scalar_like<B>)
    static_assert(std::same_as<value_type_of<A>, value_type_of<B>>,
                  "fusegrad: cannot mix tensors of different element types in one op (for example "
                  "tensor<int32_t> and tensor<float>); convert one with fg::cast<T>(x)");
  static_assert(!Op::floating_only || std::floating_point<T>,
                "fusegrad: this op needs floating-point tensors (float or double); convert with fg::cast<float>(x)");
  static_assert(!Op::arithmetic_only || !std::same_as<T, bool>,
                "fusegrad: arithmetic on a bool tensor; convert with fg::cast<float>(x) or fg::cast<int32_t>(x)");
  static_assert(!Op::bool_only || std::same_as<T, bool>, "fusegrad: logical ops take bool tensors; compare first (x > 0)");
  auto oa = operand_as<T>(a, Op::name);
  auto ob = operand_as<T>(b, Op::name);
  return expr::node<Op, decltype(oa), decltype(ob)>(op, std::move(oa), std::move(ob));
}

/// Defaults every op struct inherits: same result type as its first operand, SIMD-capable.
struct op_traits {
  template <class V, class...> using result = V;
  static constexpr bool simd = true;
  static constexpr bool floating_only = false;
  static constexpr bool arithmetic_only = true;
  static constexpr bool bool_only = false;
  /// A transcendental function, dearer to recompute than to save (Note [saved derivative],
  /// eager/saved_derivative.hpp).
  static constexpr bool costly = false;
};
/// Marks a derivative that is identically zero (expr/node.hpp).
using expr::zero_grad;
}  // namespace ops
}  // namespace fusegrad
