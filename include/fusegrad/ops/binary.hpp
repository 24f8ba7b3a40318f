#pragma once
/// \file (Used with <fusegrad/eager/evaluate.hpp>, which evaluates expressions; the umbrella header has both.)
/// Elementwise binary ops, comparisons, logical ops, where and cast; C++ operators.
/// Note [division]: `/` keeps C++'s typing (int / int stays int) and on integers it is floor
/// division, so that `a == (a / b) * b + a % b` holds with TensorFlow's floor modulo `%`.
/// fg::truediv is TensorFlow's `/` (int32 / int32 gives float64). Integer division or modulo
/// by zero gives 0, as numpy does, instead of trapping. Signed integer +, - and * wrap around
/// (Note [integer wraparound], core/integer.hpp).

#include <cmath>
#include <limits>

#include "unary.hpp"

namespace fusegrad {
namespace ops {

namespace detail_int {
template <class V> FG_HD V floor_div(V a, V b) {
  if (b == V(0)) return V(0);
  if (b == V(-1)) return static_cast<V>(0 - static_cast<std::make_unsigned_t<V>>(a));
  V q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <class V> FG_HD V floor_mod(V a, V b) {
  if (b == V(0) || b == V(-1)) return V(0);
  V r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
}  // namespace detail_int

struct add_op : op_traits {
  static constexpr const char* name = "add";
  template <class V> FG_HD V operator()(V a, V b) const {
    if constexpr (fusegrad::core::signed_integer<V>) return fusegrad::core::wrapping_add(a, b);
    else return a + b;
  }
  template <std::size_t, class G, class A, class B> static G vjp(const G& g, const A&, const B&) { return g; }
};
struct subtract_op : op_traits {
  static constexpr const char* name = "subtract";
  template <class V> FG_HD V operator()(V a, V b) const {
    if constexpr (fusegrad::core::signed_integer<V>) return fusegrad::core::wrapping_sub(a, b);
    else return a - b;
  }
  template <std::size_t I, class G, class A, class B> static auto vjp(const G& g, const A&, const B&) {
    if constexpr (I == 0) return g;
    else return -g;
  }
};
struct multiply_op : op_traits {
  static constexpr const char* name = "multiply";
  template <class V> FG_HD V operator()(V a, V b) const {
    if constexpr (fusegrad::core::signed_integer<V>) return fusegrad::core::wrapping_mul(a, b);
    else return a * b;
  }
  template <std::size_t I, class G, class A, class B> static auto vjp(const G& g, const A& a, const B& b) {
    if constexpr (I == 0) return g * b;
    else return g * a;
  }
};
/// True division on floats, floor division on integers (Note [division]).
struct divide_op : op_traits {
  static constexpr const char* name = "divide";
  template <class V> FG_HD V operator()(V a, V b) const {
    if constexpr (std::is_integral_v<V>) return detail_int::floor_div(a, b);
    else return a / b;
  }
  // A zero upstream still gives nan where b == 0, as TensorFlow's does (Note [zero upstream]).
  template <std::size_t I, class G, class A, class B> static auto vjp(const G& g, const A& a, const B& b) {
    if constexpr (I == 0) return g / b;
    else return -g * a / (b * b);
  }
};
struct floordiv_op : op_traits {
  static constexpr const char* name = "floordiv";
  template <class V> FG_HD V operator()(V a, V b) const {
    using std::floor;
    if constexpr (std::is_integral_v<V>) return detail_int::floor_div(a, b);
    else return floor(a / b);
  }
  template <std::size_t, class G, class A, class B> static zero_grad vjp(const G&, const A&, const B&) { return {}; }
};
/// Floor modulo: the result takes the divisor's sign, as in TensorFlow and Python.
struct mod_op : op_traits {
  static constexpr const char* name = "mod";
  // fmod is exact; a - b * floor(a / b) is not (it loses the remainder of large quotients).
  static constexpr bool simd = false;
  template <class V> FG_HD V operator()(V a, V b) const {
    using std::fmod;
    if constexpr (std::is_integral_v<V>) {
      return detail_int::floor_mod(a, b);
    } else {
      V r = fmod(a, b);
      return (r != V(0) && ((r < V(0)) != (b < V(0)))) ? r + b : r;
    }
  }
  template <std::size_t I, class G, class A, class B> static auto vjp(const G& g, const A& a, const B& b) {
    if constexpr (I == 0) return g;
    else return -g * floor(a / b);
  }
};
struct pow_op : op_traits {
  static constexpr const char* name = "pow";
  // The scalar pow keeps IEEE's special cases (pow(0, 0) == 1, pow(1, nan) == 1), which
  // xsimd's batch pow does not.
  static constexpr bool simd = false;
  template <class V> FG_HD V operator()(V a, V b) const {
    if constexpr (std::is_integral_v<V>) {
      // fg::pow refuses negative integer exponents (Note [integer pow]); a node built
      // otherwise gives the truncated power: only 1 and -1 have integer ones.
      if (b < 0) return a == 1 ? V(1) : (a == -1 ? (b % 2 ? V(-1) : V(1)) : V(0));
      // Square-and-multiply in the unsigned type: overflow wraps as numpy's does, with no
      // undefined behaviour (the last squaring overflows even when the result does not).
      using U = std::make_unsigned_t<V>;
      U r = 1, base = static_cast<U>(a);
      for (V e = b; e > 0; e >>= 1, base *= base)
        if (e & 1) r *= base;
      return static_cast<V>(r);
    } else {
      using std::pow;
      return pow(a, b);
    }
  }
  // d/db a^b = a^b log a, taken as 0 where a <= 0 (TensorFlow's convention). A zero upstream
  // still gives nan where the derivative is inf, as TensorFlow's does (Note [zero upstream]).
  template <std::size_t I, class G, class A, class B> static auto vjp(const G& g, const A& a, const B& b) {
    if constexpr (I == 0) return g * b * pow(a, b - 1);
    else return where(a > 0, g * pow(a, b) * log(a), 0);
  }
};
/// Ties send the gradient to the first operand, as TensorFlow does.
struct maximum_op : op_traits {
  static constexpr const char* name = "maximum";
  // NaN in either operand propagates, on every path.
  template <class V> FG_HD V operator()(V a, V b) const {
    using std::max;
    if constexpr (std::is_integral_v<V>) return max(a, b);
    else if constexpr (std::is_arithmetic_v<V>) return a != a ? a : (b != b ? b : max(a, b));
    else return select(isnan(a), a, select(isnan(b), b, max(a, b)));
  }
  template <std::size_t I, class G, class A, class B> static auto vjp(const G& g, const A& a, const B& b) {
    if constexpr (I == 0) return where(a >= b, g, 0);
    else return where(a >= b, 0, g);
  }
};
struct minimum_op : op_traits {
  static constexpr const char* name = "minimum";
  template <class V> FG_HD V operator()(V a, V b) const {
    using std::min;
    if constexpr (std::is_integral_v<V>) return min(a, b);
    else if constexpr (std::is_arithmetic_v<V>) return a != a ? a : (b != b ? b : min(a, b));
    else return select(isnan(a), a, select(isnan(b), b, min(a, b)));
  }
  template <std::size_t I, class G, class A, class B> static auto vjp(const G& g, const A& a, const B& b) {
    if constexpr (I == 0) return where(a <= b, g, 0);
    else return where(a <= b, 0, g);
  }
};

/// Comparisons give bool; in SIMD code they give the batch's mask type, which where consumes.
struct compare_traits : op_traits {
  template <class V, class...> using result = bool;
  static constexpr bool arithmetic_only = false;
  template <std::size_t, class G, class A, class B> static zero_grad vjp(const G&, const A&, const B&) { return {}; }
};
struct equal_op : compare_traits {
  static constexpr const char* name = "equal";
  template <class V> FG_HD auto operator()(V a, V b) const { return a == b; }
};
struct not_equal_op : compare_traits {
  static constexpr const char* name = "not_equal";
  // !(a == b): xsimd's AVX-512 batch != is an ordered compare, false when either is NaN.
  template <class V> FG_HD auto operator()(V a, V b) const {
    if constexpr (std::is_arithmetic_v<V>) return a != b;
    else return !(a == b);
  }
};
struct less_op : compare_traits {
  static constexpr const char* name = "less";
  template <class V> FG_HD auto operator()(V a, V b) const { return a < b; }
};
struct less_equal_op : compare_traits {
  static constexpr const char* name = "less_equal";
  template <class V> FG_HD auto operator()(V a, V b) const { return a <= b; }
};
struct greater_op : compare_traits {
  static constexpr const char* name = "greater";
  template <class V> FG_HD auto operator()(V a, V b) const { return a > b; }
};
struct greater_equal_op : compare_traits {
  static constexpr const char* name = "greater_equal";
  template <class V> FG_HD auto operator()(V a, V b) const { return a >= b; }
};
struct logical_traits : compare_traits {
  static constexpr bool bool_only = true;
};
struct logical_and_op : logical_traits {
  static constexpr const char* name = "logical_and";
  template <class V> FG_HD auto operator()(V a, V b) const {
    if constexpr (std::is_same_v<V, bool>) return a && b;
    else return a & b;
  }
};
struct logical_or_op : logical_traits {
  static constexpr const char* name = "logical_or";
  template <class V> FG_HD auto operator()(V a, V b) const {
    if constexpr (std::is_same_v<V, bool>) return a || b;
    else return a | b;
  }
};
struct logical_xor_op : logical_traits {
  static constexpr const char* name = "logical_xor";
  template <class V> FG_HD auto operator()(V a, V b) const { return a != b; }
};

/// where(c, a, b): a where c is true, else b.
struct where_op : op_traits {
  static constexpr const char* name = "where";
  static constexpr bool arithmetic_only = false;
  template <class C, class V, class...> using result = V;
  template <class C, class V> FG_HD V operator()(C c, V a, V b) const {
    if constexpr (std::is_same_v<C, bool>) return c ? a : b;
    else return select(c, a, b);
  }
  template <std::size_t I, class G, class C, class A, class B>
  static auto vjp(const G& g, const C& c, const A&, const B&) {
    if constexpr (I == 0) return zero_grad{};
    else if constexpr (I == 1) return where(c, g, 0);
    else return where(c, 0, g);
  }
};

template <class U>
struct cast_op : op_traits {
  static constexpr const char* name = "cast";
  static constexpr bool simd = false;
  static constexpr bool arithmetic_only = false;
  template <class V, class...> using result = U;
  // Floating values outside the integer type's range give its minimum (Note [float to integer]).
  template <class V> FG_HD U operator()(V x) const {
    if constexpr (std::is_floating_point_v<V> && fusegrad::core::signed_integer<U>)
      return fusegrad::core::float_to_integer<U>(x);
    else return static_cast<U>(x);
  }
  template <std::size_t, class G, class X> static auto vjp(const G& g, const X&) {
    using S = typename X::value_type;
    if constexpr (std::is_floating_point_v<S> && std::is_floating_point_v<U>) return cast<S>(g);
    else return zero_grad{};
  }
};
}  // namespace ops

namespace ops {
template <class A, class B>
concept binary_operands = (tensor_like<A> && (tensor_like<B> || scalar_like<B>)) || (scalar_like<A> && tensor_like<B>);
}

/// a + b with broadcasting.
template <class A, class B> requires ops::binary_operands<A, B>
auto add(const A& a, const B& b) { return ops::make_binary<ops::add_op>(a, b); }
/// a - b with broadcasting.
template <class A, class B> requires ops::binary_operands<A, B>
auto subtract(const A& a, const B& b) { return ops::make_binary<ops::subtract_op>(a, b); }
/// a * b with broadcasting.
template <class A, class B> requires ops::binary_operands<A, B>
auto multiply(const A& a, const B& b) { return ops::make_binary<ops::multiply_op>(a, b); }
/// a / b: true division on floats, floor division on integers (Note [division]).
template <class A, class B> requires ops::binary_operands<A, B>
auto divide(const A& a, const B& b) { return ops::make_binary<ops::divide_op>(a, b); }
/// Floor of a / b (Python's //).
template <class A, class B> requires ops::binary_operands<A, B>
auto floordiv(const A& a, const B& b) { return ops::make_binary<ops::floordiv_op>(a, b); }
/// Floor modulo, the result having the divisor's sign.
template <class A, class B> requires ops::binary_operands<A, B>
auto mod(const A& a, const B& b) { return ops::make_binary<ops::mod_op>(a, b); }
namespace ops {
/// Note [integer pow]: an integer raised to a negative integer has no integer value, and
/// TensorFlow refuses it ("Integers to negative integer powers are not allowed") rather than
/// truncating. fg::pow does the same when it builds the node, before anything runs, so every
/// path that evaluates the node (fused, op by op, one element, on a device) sees only
/// non-negative exponents: a scalar exponent is checked at once, a tensor one element by element
/// (an integer exponent expression is evaluated first, to be checked).
template <class T>
void check_integer_exponent(const tensor<T>& b) {
  if (!b.defined()) return;  // make_binary names pow in its error
  const tensor<T> h = b.device().is_cpu() ? b : b.cpu();
  for (std::size_t i = 0; i < h.size(); ++i)
    FG_CHECK(h.data()[i] >= 0, value_error, "fg::pow: integers to negative integer powers are not allowed (exponent ",
             h.data()[i], " at element ", i, " of an exponent of shape ", h.shape(),
             "); convert the base with fg::cast<float>(x) for a fractional result");
}
}  // namespace ops

/// a raised to b. Integer exponents must be non-negative, as in TensorFlow (Note [integer pow]).
template <class A, class B> requires ops::binary_operands<A, B>
auto pow(const A& a, const B& b) {
  using T = typename ops::common_value<A, B>::type;
  if constexpr (core::signed_integer<T>) {
    if constexpr (scalar_like<B>) {
      if constexpr (std::is_signed_v<B>)
        FG_CHECK(b >= 0, value_error, "fg::pow: integers to negative integer powers are not allowed (exponent ", b,
                 "); convert the base with fg::cast<float>(x) for a fractional result");
      return ops::make_binary<ops::pow_op>(a, b);
    } else {
      const tensor<T> bt = eval(b);
      ops::check_integer_exponent(bt);
      return ops::make_binary<ops::pow_op>(a, bt);
    }
  } else {
    return ops::make_binary<ops::pow_op>(a, b);
  }
}
/// Elementwise larger of a and b.
template <class A, class B> requires ops::binary_operands<A, B>
auto maximum(const A& a, const B& b) { return ops::make_binary<ops::maximum_op>(a, b); }
/// Elementwise smaller of a and b.
template <class A, class B> requires ops::binary_operands<A, B>
auto minimum(const A& a, const B& b) { return ops::make_binary<ops::minimum_op>(a, b); }
/// a == b elementwise (bool).
template <class A, class B> requires ops::binary_operands<A, B>
auto equal(const A& a, const B& b) { return ops::make_binary<ops::equal_op>(a, b); }
/// a != b elementwise (bool).
template <class A, class B> requires ops::binary_operands<A, B>
auto not_equal(const A& a, const B& b) { return ops::make_binary<ops::not_equal_op>(a, b); }
/// a < b elementwise (bool).
template <class A, class B> requires ops::binary_operands<A, B>
auto less(const A& a, const B& b) { return ops::make_binary<ops::less_op>(a, b); }
/// a <= b elementwise (bool).
template <class A, class B> requires ops::binary_operands<A, B>
auto less_equal(const A& a, const B& b) { return ops::make_binary<ops::less_equal_op>(a, b); }
/// a > b elementwise (bool).
template <class A, class B> requires ops::binary_operands<A, B>
auto greater(const A& a, const B& b) { return ops::make_binary<ops::greater_op>(a, b); }
/// a >= b elementwise (bool).
template <class A, class B> requires ops::binary_operands<A, B>
auto greater_equal(const A& a, const B& b) { return ops::make_binary<ops::greater_equal_op>(a, b); }
/// a and b elementwise on bool tensors.
template <class A, class B> requires ops::binary_operands<A, B>
auto logical_and(const A& a, const B& b) { return ops::make_binary<ops::logical_and_op>(a, b); }
/// a or b elementwise on bool tensors.
template <class A, class B> requires ops::binary_operands<A, B>
auto logical_or(const A& a, const B& b) { return ops::make_binary<ops::logical_or_op>(a, b); }
/// a xor b elementwise on bool tensors.
template <class A, class B> requires ops::binary_operands<A, B>
auto logical_xor(const A& a, const B& b) { return ops::make_binary<ops::logical_xor_op>(a, b); }

/// TensorFlow's `/`: integers are converted to float64 first (int32 / int32 gives float64).
template <class A, class B> requires ops::binary_operands<A, B>
auto truediv(const A& a, const B& b);

/// Elements of a where cond is true, else of b; a and b may be C++ scalars.
template <tensor_like C, class A, class B>
  requires((tensor_like<A> || scalar_like<A>) && (tensor_like<B> || scalar_like<B>))
auto where(const C& cond, const A& a, const B& b) {
  static_assert(std::same_as<value_type_of<C>, bool>, "fg::where: the condition must be a bool tensor (for example x > 0)");
  static_assert(tensor_like<A> || tensor_like<B>, "fg::where: give at least one of the two branches as a tensor");
  using T = typename ops::common_value<A, B>::type;
  if constexpr (tensor_like<A> && tensor_like<B>)
    static_assert(std::same_as<value_type_of<A>, value_type_of<B>>,
                  "fg::where: both branches must have one element type; convert one with fg::cast<T>(x)");
  auto oa = ops::operand_as<T>(a, "where");
  auto ob = ops::operand_as<T>(b, "where");
  auto oc = ops::to_operand(cond);
  return expr::node<ops::where_op, decltype(oc), decltype(oa), decltype(ob)>({}, oc, oa, ob);
}

/// Converts elements to U: floats to integers truncate toward zero, and NaN, infinities and
/// values outside the integer type's range give its minimum (INT_MIN), as TensorFlow on x86
/// does (Note [float to integer]); integers to narrower integers wrap; nonzero to true.
template <element_type U, tensor_like X>
auto cast(const X& x) {
  return expr::node<ops::cast_op<U>, ops::operand_t<X>>({}, ops::to_operand(x));
}

template <class A, class B> requires ops::binary_operands<A, B>
auto truediv(const A& a, const B& b) {
  using T = typename ops::common_value<A, B>::type;
  if constexpr (std::floating_point<T>) {
    return divide(a, b);
  } else {
    auto conv = [](const auto& v) {
      if constexpr (scalar_like<std::remove_cvref_t<decltype(v)>>) return static_cast<double>(v);
      else return cast<double>(v);
    };
    return divide(conv(a), conv(b));
  }
}

/// Clips values into [lo, hi].
template <tensor_like X, class L, class H>
auto clip_by_value(const X& x, const L& lo, const H& hi) { return minimum(maximum(x, lo), hi); }

template <class A, class B> requires ops::binary_operands<A, B>
auto operator+(const A& a, const B& b) { return add(a, b); }
template <class A, class B> requires ops::binary_operands<A, B>
auto operator-(const A& a, const B& b) { return subtract(a, b); }
template <class A, class B> requires ops::binary_operands<A, B>
auto operator*(const A& a, const B& b) { return multiply(a, b); }
template <class A, class B> requires ops::binary_operands<A, B>
auto operator/(const A& a, const B& b) { return divide(a, b); }
template <class A, class B> requires ops::binary_operands<A, B>
auto operator%(const A& a, const B& b) { return mod(a, b); }
template <class A, class B> requires ops::binary_operands<A, B>
auto operator==(const A& a, const B& b) { return equal(a, b); }
template <class A, class B> requires ops::binary_operands<A, B>
auto operator!=(const A& a, const B& b) { return not_equal(a, b); }
template <class A, class B> requires ops::binary_operands<A, B>
auto operator<(const A& a, const B& b) { return less(a, b); }
template <class A, class B> requires ops::binary_operands<A, B>
auto operator<=(const A& a, const B& b) { return less_equal(a, b); }
template <class A, class B> requires ops::binary_operands<A, B>
auto operator>(const A& a, const B& b) { return greater(a, b); }
template <class A, class B> requires ops::binary_operands<A, B>
auto operator>=(const A& a, const B& b) { return greater_equal(a, b); }
template <class A, class B> requires ops::binary_operands<A, B>
auto operator&(const A& a, const B& b) { return logical_and(a, b); }
template <class A, class B> requires ops::binary_operands<A, B>
auto operator|(const A& a, const B& b) { return logical_or(a, b); }
template <class A, class B> requires ops::binary_operands<A, B>
auto operator^(const A& a, const B& b) { return logical_xor(a, b); }
}  // namespace fusegrad
