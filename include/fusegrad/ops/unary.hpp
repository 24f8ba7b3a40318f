#pragma once
/// \file (Used with <fusegrad/eager/evaluate.hpp>, which evaluates expressions; the umbrella header has both.)
/// Elementwise unary ops. Each op is one struct: its name, its forward rule written once
/// as a template over the value type (a scalar, an xsimd batch, or a value in device code;
/// `using std::f; f(x)` lets argument-dependent lookup pick xsimd's overload for a batch), and
//// its vector-Jacobian product written with fusegrad's own ops, so backward passes fuse and are
/// themselves differentiable. The derivative rules call ops unqualified: argument-dependent
/// lookup finds them through the expression types, whichever header declares them.
/// Note [zero upstream]: as in TensorFlow (its SqrtGrad, RsqrtGrad and ReciprocalGrad kernels),
/// the gradients of sqrt, rsqrt and reciprocal are 0 wherever the upstream gradient is exactly
/// 0, even where the derivative is inf or nan: where(v > 0, sqrt(v), 0) sends an upstream of 0
/// to sqrt at v <= 0, and its gradient there is 0, not nan. Their rules are
/// `where(g == 0, 0, <rule>)`, still fusegrad ops (SIMD, differentiable). TensorFlow's other
/// gradients (log, log1p, tan, exp; division and pow in binary.hpp) multiply or divide the
/// upstream by the derivative, so a zero upstream there still meets an inf derivative as nan,
/// and so do their rules here (tests/reference/where_mask_grads.py).

#include <cmath>

#include "common.hpp"

namespace fusegrad {
namespace ops {

struct float_op : op_traits { static constexpr bool floating_only = true; };

/// Note [float64 exp range]: without AVX-512DQ there is no vector conversion from double to
/// int64, and xsimd 8.1's float64 exp and expm1 (and tanh, which calls exp) convert the integer
/// part of the reduced argument with a plain C++ conversion, lane by lane. For an infinite, NaN
/// or huge argument that conversion is undefined behaviour (x86 gives INT64_MIN and xsimd then
/// selects the lane's result away, so the values come out right, but UBSan's float-cast-overflow
/// check stops there). So double batches on such machines reach these functions through
/// `math::exp`, `math::expm1` and `math::tanh`, which pass an argument clamped to [-800, 800]
/// with NaN replaced by 0, and give NaN lanes their argument back. exp, expm1 and tanh already
/// reach their limits (inf or 0, inf or -1, 1 or -1) well inside ±800, so every value is
/// unchanged. Scalars, float batches and AVX-512DQ batches call the functions as they are.
namespace math {
template <class V> inline constexpr bool needs_exp_range = false;
template <class V> requires std::is_same_v<typename V::value_type, double>
#if defined(__AVX512DQ__)
inline constexpr bool needs_exp_range<V> = V::size != 8;  // a narrower batch converts lane by lane
#else
inline constexpr bool needs_exp_range<V> = true;
#endif
template <class V> FG_HD V exp_range(V x) {
  const V bounded = select(x > V(800), V(800), select(x < V(-800), V(-800), x));
  return select(x == x, bounded, V(0));
}
template <class V> FG_HD V exp(V x) {
  using std::exp;
  if constexpr (needs_exp_range<V>) return select(x == x, exp(exp_range(x)), x);
  else return exp(x);
}
template <class V> FG_HD V expm1(V x) {
  using std::expm1;
  if constexpr (needs_exp_range<V>) return select(x == x, expm1(exp_range(x)), x);
  else return expm1(x);
}
template <class V> FG_HD V tanh(V x) {
  using std::tanh;
  if constexpr (needs_exp_range<V>) return select(x == x, tanh(exp_range(x)), x);
  else return tanh(x);
}
}  // namespace math

struct negative_op : op_traits {
  static constexpr const char* name = "negative";
  // -0.0 - x, not 0 - x: the negation of +0.0 is -0.0 (xsimd's batch negation computes 0 - x).
  template <class V> FG_HD V operator()(V x) const {
    if constexpr (fusegrad::core::signed_integer<V>) return fusegrad::core::wrapping_neg(x);
    else return V(-0.0) - x;
  }
  template <std::size_t, class G, class X> static auto vjp(const G& g, const X&) { return -g; }
};
struct abs_op : op_traits {
  static constexpr const char* name = "abs";
  // abs of the integer minimum is the minimum (Note [integer wraparound]).
  template <class V> FG_HD V operator()(V x) const {
    using std::abs;
    if constexpr (fusegrad::core::signed_integer<V>) return fusegrad::core::wrapping_abs(x);
    else return abs(x);
  }
  template <std::size_t, class G, class X> static auto vjp(const G& g, const X& x) { return g * sign(x); }
};
struct sign_op : op_traits {
  static constexpr const char* name = "sign";
  template <class V> FG_HD V operator()(V x) const {
    if constexpr (std::is_arithmetic_v<V>) return x > V(0) ? V(1) : (x < V(0) ? V(-1) : x);
    else return select(x > V(0), V(1), select(x < V(0), V(-1), x));
  }
  template <std::size_t, class G, class X> static zero_grad vjp(const G&, const X&) { return {}; }
};
struct exp_op : float_op {
  static constexpr bool costly = true;
  static constexpr const char* name = "exp";
  // Note [float64 exp range].
  template <class V> FG_HD V operator()(V x) const { return math::exp(x); }
  template <std::size_t, class G, class X> static auto vjp(const G& g, const X& x) { return g * exp(x); }
};
struct expm1_op : float_op {
  static constexpr bool costly = true;
  static constexpr const char* name = "expm1";
  // Zeros pass through, keeping their sign (xsimd's batch expm1 turns -0.0 into +0.0).
  template <class V> FG_HD V operator()(V x) const {
    if constexpr (std::is_arithmetic_v<V>) return math::expm1(x);
    else return select(x == V(0), x, math::expm1(x));
  }
  template <std::size_t, class G, class X> static auto vjp(const G& g, const X& x) { return g * exp(x); }
};
struct log_op : float_op {
  static constexpr bool costly = true;
  static constexpr const char* name = "log";
  template <class V> FG_HD V operator()(V x) const { using std::log; return log(x); }
  template <std::size_t, class G, class X> static auto vjp(const G& g, const X& x) { return g / x; }
};
struct log1p_op : float_op {
  static constexpr bool costly = true;
  static constexpr const char* name = "log1p";
  // Zeros pass through, keeping their sign (xsimd's batch log1p turns -0.0 into +0.0).
  template <class V> FG_HD V operator()(V x) const {
    using std::log1p;
    if constexpr (std::is_arithmetic_v<V>) return log1p(x);
    else return select(x == V(0), x, log1p(x));
  }
  template <std::size_t, class G, class X> static auto vjp(const G& g, const X& x) { return g / (1 + x); }
};
struct sqrt_op : float_op {
  static constexpr const char* name = "sqrt";
  template <class V> FG_HD V operator()(V x) const { using std::sqrt; return sqrt(x); }
  // Note [zero upstream].
  template <std::size_t, class G, class X> static auto vjp(const G& g, const X& x) {
    return where(g == 0, 0, g / (2 * sqrt(x)));
  }
};
struct rsqrt_op : float_op {
  static constexpr const char* name = "rsqrt";
  // Exact 1/sqrt: xsimd's rsqrt is an approximation.
  template <class V> FG_HD V operator()(V x) const { using std::sqrt; return V(1) / sqrt(x); }
  // Note [zero upstream].
  template <std::size_t, class G, class X> static auto vjp(const G& g, const X& x) {
    return where(g == 0, 0, -0.5 * g * rsqrt(x) / x);
  }
};
struct square_op : op_traits {
  static constexpr const char* name = "square";
  template <class V> FG_HD V operator()(V x) const {
    if constexpr (fusegrad::core::signed_integer<V>) return fusegrad::core::wrapping_mul(x, x);
    else return x * x;
  }
  template <std::size_t, class G, class X> static auto vjp(const G& g, const X& x) { return g * (2 * x); }
};
struct reciprocal_op : float_op {
  static constexpr const char* name = "reciprocal";
  template <class V> FG_HD V operator()(V x) const { return V(1) / x; }
  // Note [zero upstream].
  template <std::size_t, class G, class X> static auto vjp(const G& g, const X& x) {
    return where(g == 0, 0, -g / (x * x));
  }
};
struct sin_op : float_op {
  static constexpr bool costly = true;
  static constexpr const char* name = "sin";
  template <class V> FG_HD V operator()(V x) const { using std::sin; return sin(x); }
  template <std::size_t, class G, class X> static auto vjp(const G& g, const X& x) { return g * cos(x); }
};
struct cos_op : float_op {
  static constexpr bool costly = true;
  static constexpr const char* name = "cos";
  template <class V> FG_HD V operator()(V x) const { using std::cos; return cos(x); }
  template <std::size_t, class G, class X> static auto vjp(const G& g, const X& x) { return -(g * sin(x)); }
};
struct tan_op : float_op {
  static constexpr bool costly = true;
  static constexpr const char* name = "tan";
  template <class V> FG_HD V operator()(V x) const { using std::tan; return tan(x); }
  template <std::size_t, class G, class X> static auto vjp(const G& g, const X& x) { return g * (1 + square(tan(x))); }
};
struct tanh_op : float_op {
  static constexpr bool costly = true;
  static constexpr const char* name = "tanh";
  template <class V> FG_HD V operator()(V x) const { return math::tanh(x); }
  template <std::size_t, class G, class X> static auto vjp(const G& g, const X& x) { return g * (1 - square(tanh(x))); }
};
struct sigmoid_op : float_op {
  static constexpr bool costly = true;
  static constexpr const char* name = "sigmoid";
  template <class V> FG_HD V operator()(V x) const { return V(1) / (V(1) + math::exp(-x)); }
  template <std::size_t, class G, class X> static auto vjp(const G& g, const X& x) { return g * sigmoid_derivative(x); }
};
/// f applied to each lane of an xsimd batch: for the ops whose xsimd form is less accurate
/// than the C library's (erf in double, erfc).
template <class V, class F> V per_lane(V x, F f) {
  typename V::value_type lanes[V::size];
  x.store_unaligned(lanes);
  for (auto& v : lanes) v = f(v);
  return V::load_unaligned(lanes);
}
struct erf_op : float_op {
  static constexpr bool costly = true;
  static constexpr const char* name = "erf";
  // xsimd's float erf is within 2 ulp; its double erf is off by up to about 40 ulp, so double
  // batches take the C library's erf lane by lane.
  template <class V> FG_HD V operator()(V x) const {
    using std::erf;
    if constexpr (std::is_arithmetic_v<V>) return erf(x);
    else if constexpr (std::is_same_v<typename V::value_type, float>) return erf(x);
    else return per_lane(x, [](double v) { return std::erf(v); });
  }
  // 2 / sqrt(pi) * e^(-x^2).
  template <std::size_t, class G, class X> static auto vjp(const G& g, const X& x) {
    return g * (1.1283791670955126 * exp(-square(x)));
  }
};
/// 1 - erf(x), without the cancellation of that difference where erf(x) is near 1 (tf.math.erfc).
struct erfc_op : float_op {
  static constexpr bool costly = true;
  static constexpr const char* name = "erfc";
  // xsimd's erfc loses up to 20 ulp in float and more in double (and flushes its smallest
  // results to 0), so batches take the C library's erfc lane by lane.
  template <class V> FG_HD V operator()(V x) const {
    using std::erfc;
    if constexpr (std::is_arithmetic_v<V>) return erfc(x);
    else return per_lane(x, [](typename V::value_type v) { return std::erfc(v); });
  }
  template <std::size_t, class G, class X> static auto vjp(const G& g, const X& x) {
    return g * (-1.1283791670955126 * exp(-square(x)));
  }
};
// sigmoid's derivative s (1 - s) as one op: one exponential per element where the composite
// sigmoid(x) * (1 - sigmoid(x)) takes two (backward passes recompute it for every element).
struct sigmoid_derivative_op : float_op {
  static constexpr bool costly = true;
  static constexpr const char* name = "sigmoid_derivative";
  template <class V> FG_HD V operator()(V x) const {
    const V s = V(1) / (V(1) + math::exp(-x));
    return s * (V(1) - s);
  }
  template <std::size_t, class G, class X> static auto vjp(const G& g, const X& x) {
    return g * sigmoid_derivative(x) * (1 - 2 * sigmoid(x));
  }
};
// softplus is a primitive, not log1p(exp(-|x|)) + max(x, 0) from primitives: the composite's
// derivative at 0 would depend on the tie rules of abs and maximum (giving 1, not 0.5).
struct softplus_op : float_op {
  static constexpr bool costly = true;
  static constexpr const char* name = "softplus";
  template <class V> FG_HD V operator()(V x) const {
    using std::abs; using std::log1p; using std::max;
    return max(x, V(0)) + log1p(math::exp(-abs(x)));
  }
  template <std::size_t, class G, class X> static auto vjp(const G& g, const X& x) { return g * sigmoid(x); }
};
struct relu_op : op_traits {
  static constexpr const char* name = "relu";
  // NaN propagates (the hardware max returns its second operand when either is NaN).
  template <class V> FG_HD V operator()(V x) const {
    using std::max;
    if constexpr (std::is_integral_v<V>) return max(x, V(0));
    else if constexpr (std::is_arithmetic_v<V>) return x != x ? x : max(x, V(0));
    else return select(isnan(x), x, max(x, V(0)));
  }
  template <std::size_t, class G, class X> static auto vjp(const G& g, const X& x) { return where(x > 0, g, 0); }
};
struct floor_op : float_op {
  static constexpr const char* name = "floor";
  template <class V> FG_HD V operator()(V x) const { using std::floor; return floor(x); }
  template <std::size_t, class G, class X> static zero_grad vjp(const G&, const X&) { return {}; }
};
struct ceil_op : float_op {
  static constexpr const char* name = "ceil";
  template <class V> FG_HD V operator()(V x) const { using std::ceil; return ceil(x); }
  template <std::size_t, class G, class X> static zero_grad vjp(const G&, const X&) { return {}; }
};
/// Rounds half to even, as tf.round does.
struct round_op : float_op {
  static constexpr const char* name = "round";
  template <class V> FG_HD V operator()(V x) const { using std::nearbyint; return nearbyint(x); }
  template <std::size_t, class G, class X> static zero_grad vjp(const G&, const X&) { return {}; }
};
struct logical_not_op : op_traits {
  static constexpr const char* name = "logical_not";
  static constexpr bool arithmetic_only = false;
  static constexpr bool simd = false;
  template <class V> FG_HD V operator()(V x) const { return !x; }
  template <std::size_t, class G, class X> static zero_grad vjp(const G&, const X&) { return {}; }
};
}  // namespace ops

/// -x elementwise.
template <tensor_like X> auto negative(const X& x) { return ops::make_unary<ops::negative_op>(x); }
/// |x| elementwise.
template <tensor_like X> auto abs(const X& x) { return ops::make_unary<ops::abs_op>(x); }
/// -1, 0 or 1 by the sign of x (0 keeps its sign bit; NaN stays NaN).
template <tensor_like X> auto sign(const X& x) { return ops::make_unary<ops::sign_op>(x); }
/// e^x.
template <tensor_like X> auto exp(const X& x) { return ops::make_unary<ops::exp_op>(x); }
/// e^x - 1, accurate near 0.
template <tensor_like X> auto expm1(const X& x) { return ops::make_unary<ops::expm1_op>(x); }
/// Natural logarithm.
template <tensor_like X> auto log(const X& x) { return ops::make_unary<ops::log_op>(x); }
/// log(1 + x), accurate near 0.
template <tensor_like X> auto log1p(const X& x) { return ops::make_unary<ops::log1p_op>(x); }
/// Square root.
template <tensor_like X> auto sqrt(const X& x) { return ops::make_unary<ops::sqrt_op>(x); }
/// 1 / sqrt(x).
template <tensor_like X> auto rsqrt(const X& x) { return ops::make_unary<ops::rsqrt_op>(x); }
/// x * x.
template <tensor_like X> auto square(const X& x) { return ops::make_unary<ops::square_op>(x); }
/// 1 / x.
template <tensor_like X> auto reciprocal(const X& x) { return ops::make_unary<ops::reciprocal_op>(x); }
/// Sine.
template <tensor_like X> auto sin(const X& x) { return ops::make_unary<ops::sin_op>(x); }
/// Cosine.
template <tensor_like X> auto cos(const X& x) { return ops::make_unary<ops::cos_op>(x); }
/// Tangent.
template <tensor_like X> auto tan(const X& x) { return ops::make_unary<ops::tan_op>(x); }
/// Hyperbolic tangent.
template <tensor_like X> auto tanh(const X& x) { return ops::make_unary<ops::tanh_op>(x); }
/// The error function, 2 / sqrt(pi) times the integral of e^(-t^2) from 0 to x.
template <tensor_like X> auto erf(const X& x) { return ops::make_unary<ops::erf_op>(x); }
/// The complementary error function 1 - erf(x), accurate where erf(x) is near 1.
template <tensor_like X> auto erfc(const X& x) { return ops::make_unary<ops::erfc_op>(x); }
/// 1 / (1 + e^-x).
template <tensor_like X> auto sigmoid(const X& x) { return ops::make_unary<ops::sigmoid_op>(x); }
/// sigmoid(x) * (1 - sigmoid(x)), the derivative of sigmoid, with one exponential.
template <tensor_like X> auto sigmoid_derivative(const X& x) { return ops::make_unary<ops::sigmoid_derivative_op>(x); }
/// log(1 + e^x), computed without overflow.
template <tensor_like X> auto softplus(const X& x) { return ops::make_unary<ops::softplus_op>(x); }
/// max(x, 0).
template <tensor_like X> auto relu(const X& x) { return ops::make_unary<ops::relu_op>(x); }
/// Largest integer not greater than x.
template <tensor_like X> auto floor(const X& x) { return ops::make_unary<ops::floor_op>(x); }
/// Smallest integer not less than x.
template <tensor_like X> auto ceil(const X& x) { return ops::make_unary<ops::ceil_op>(x); }
/// Nearest integer, halves to even.
template <tensor_like X> auto round(const X& x) { return ops::make_unary<ops::round_op>(x); }
/// Elementwise not of a bool tensor.
template <tensor_like X> auto logical_not(const X& x) {
  static_assert(std::same_as<value_type_of<X>, bool>, "fg::logical_not takes a bool tensor; compare first (x > 0)");
  return ops::make_unary<ops::logical_not_op>(x);
}
/// -x.
template <tensor_like X> auto operator-(const X& x) { return negative(x); }
/// Elementwise not of a bool tensor.
template <tensor_like X> auto operator!(const X& x) { return logical_not(x); }
}  // namespace fusegrad
