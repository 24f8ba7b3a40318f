#pragma once
/// \file Reductions: sum, mean, max, min, prod, all, any over all or given axes (keepdims),
/// argmax/argmin, and the stable logsumexp. sum and mean fuse their operand expression into
/// the reduction pass (also under a tape); the others fuse it when no tape records.

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <memory>
#include <vector>

#include "../eval/creation.hpp"
#include "../ops/indexing_rules.hpp"
#include "boundary.hpp"
#include "reshape.hpp"

namespace fusegrad {

/// Which axes a reduction runs over: all (the default), one, or a list (negative counts from the end).
struct axes {
  std::vector<long> list;
  bool all = true;
  axes() = default;
  axes(int a) : list{a}, all(false) {}  // NOLINT: implicit, `fg::sum(x, 1)`
  axes(long a) : list{a}, all(false) {}  // NOLINT
  axes(std::initializer_list<long> l) : list(l), all(false) {}
  axes(std::vector<long> l) : list(std::move(l)), all(false) {}  // NOLINT
};

namespace eager {
struct reduce_plan {
  fg::shape keep;  ///< rank of the input, 1 on reduced dimensions
  fg::shape out;   ///< keep without the reduced dimensions
  std::size_t count = 1;  ///< elements folded into each output
  std::vector<bool> reduced;
};

inline reduce_plan plan_reduce(const fg::shape& s, const axes& ax, const char* op) {
  reduce_plan p;
  p.reduced.assign(s.rank(), ax.all);
  if (!ax.all)
    for (long a : ax.list) {
      const std::size_t d = core::normalize_axis(a, s.rank(), op);
      FG_CHECK(!p.reduced[d], shape_error, "fg::", op, ": axis ", a, " is listed twice");
      p.reduced[d] = true;
    }
  for (std::size_t d = 0; d < s.rank(); ++d) {
    p.keep.push_back(p.reduced[d] ? 1 : s[d]);
    if (p.reduced[d]) p.count *= s[d];
    else p.out.push_back(s[d]);
  }
  return p;
}

template <class T>
tensor<T> finish_reduce(const tensor<T>& r, const reduce_plan& p, bool keepdims) {
  return keepdims || r.shape() == p.out ? r : reshape(r, p.out);
}

/// Reduces x with reducer R, fused over an expression operand when no tape records.
template <class R, class X, class T = value_type_of<X>>
tensor<T> reduce_with(const X& x, const reduce_plan& p, const fg::shape& in_shape, fg::device d) {
  tensor<T> r(p.keep, d);
  dispatch::run_reduction<R>(x, in_shape, p.keep, d, r.buffer()->data);
  return r;
}

}  // namespace eager

/// Sum over axes (all by default); fused with its operand expression.
template <tensor_like X>
tensor<value_type_of<X>> reduce_sum(const X& x, const axes& ax = {}, bool keepdims = false) {
  static_assert(!std::same_as<value_type_of<X>, bool>, "fg::reduce_sum: sum of a bool tensor; fg::cast<int32_t>(x) first");
  auto opnd = ops::to_operand(x);
  const auto p = eager::plan_reduce(opnd.shape(), ax, "reduce_sum");
  return eager::finish_reduce(eager::sum_to(opnd, opnd.shape(), p.keep), p, keepdims);
}
/// Alias of fg::reduce_sum.
template <tensor_like X>
tensor<value_type_of<X>> sum(const X& x, const axes& ax = {}, bool keepdims = false) { return reduce_sum(x, ax, keepdims); }

namespace eager {
/// The integer mean of `count` elements whose sum is s, truncated toward zero (0 for no
/// elements). The count may exceed T's range (a broadcast operand of more than 2^31 elements):
/// then the quotient is computed as the exact one would be, not over a wrapped divisor.
template <class T>
T integer_mean(T s, std::size_t count) {
  constexpr auto max = static_cast<std::size_t>(std::numeric_limits<T>::max());
  if (count == 0) return T(0);
  if (count <= max) return static_cast<T>(s / static_cast<T>(count));
  // |s| <= max + 1 <= count: the quotient is -1 for s = min over a count of max + 1, else 0.
  return s == std::numeric_limits<T>::min() && count == max + 1 ? T(-1) : T(0);
}
}  // namespace eager

/// Mean over axes (all by default), fused with its operand in one pass. Integer means truncate
/// toward zero, as C++ and TensorFlow's integer mean do, and sum in the element type (Note
/// [integer wraparound]).
template <tensor_like X>
tensor<value_type_of<X>> reduce_mean(const X& x, const axes& ax = {}, bool keepdims = false) {
  using T = value_type_of<X>;
  auto opnd = ops::to_operand(x);
  const auto p = eager::plan_reduce(opnd.shape(), ax, "reduce_mean");
  if constexpr (std::is_floating_point_v<T>) {
    // The mean of nothing is NaN, as in numpy and TensorFlow; recorded, so that the input's
    // gradient is defined (zeros of its shape, no elements when the reduction is full).
    if (p.count == 0) {
      const tensor<T> xt = eval(opnd);
      tensor<T> r = fill<T>(p.keep, std::numeric_limits<T>::quiet_NaN(), xt.device());
      eager::epilogue("reduce_mean", r, {xt.shape()}, {xt.id()}, [in = xt.shape()](const tensor<T>& g, auto) {
        return std::array{fill<T>(in, T(0), g.device())};
      });
      return eager::finish_reduce(r, p, keepdims);
    }
    return eager::finish_reduce(eager::mean_to(opnd, opnd.shape(), p.keep, p.count), p, keepdims);
  } else {
    const tensor<T> s = eager::finish_reduce(eager::sum_to(opnd, opnd.shape(), p.keep), p, keepdims);
    const tensor<T> hs = dispatch::host_operand(s, "reduce_mean");  // a host loop (docs/device.md)
    tensor<T> r(s.shape(), fg::device::cpu());
    for (std::size_t i = 0; i < s.size(); ++i) r.buffer()->data[i] = eager::integer_mean(hs.data()[i], p.count);
    return r.to(s.device());
  }
}
/// Alias of fg::reduce_mean.
template <tensor_like X>
tensor<value_type_of<X>> mean(const X& x, const axes& ax = {}, bool keepdims = false) { return reduce_mean(x, ax, keepdims); }

namespace eager {
/// Reduces x with R: fused over an expression operand when no tape records; otherwise the
/// operand is evaluated (recorded) and `backward(xt, y, keep)` gives the gradient rule.
template <class R, class X, class B>
tensor<value_type_of<X>> reduce_recorded(const X& x, const axes& ax, bool keepdims, const char* op, B backward) {
  using T = value_type_of<X>;
  auto opnd = ops::to_operand(x);
  const reduce_plan p = plan_reduce(opnd.shape(), ax, op);
  if constexpr (expression<decltype(opnd)>)
    if (!(std::is_floating_point_v<T> && autodiff::recording())) {
      const tensor<T> y = reduce_with<R>(opnd, p, opnd.shape(), dispatch::common_device(opnd));
      // Checked here, before the reshape to the result's shape (or none, with keepdims): the
      // error names the op of the fused chain that made the first NaN or Inf, or the reduction.
      eager::epilogue(
          y, [&](const auto& r, core::nonfinite f) { report_fused(opnd, r, f, op); }, [](const auto&) {});
      return finish_reduce(y, p, keepdims);
    }
  const tensor<T> xt = eval(opnd);
  tensor<T> y = reduce_with<R>(expr::leaf<T>{xt}, p, xt.shape(), xt.device());
  eager::epilogue(op, y, {xt.shape()}, {xt.id()}, [xt, y, keep = p.keep, ax, backward](const tensor<T>& g, auto) {
    return std::array{backward(xt, y, reshape(g, keep), ax)};
  });
  return finish_reduce(y, p, keepdims);
}

/// The weights of a max or min's gradient, in x's shape: 1 / (the number of ties) at the
/// elements of x equal to their reduced extremum y (kept shape), 0 elsewhere. Unrecorded: they
/// come from a comparison, through which no gradient flows.
template <class T>
tensor<T> extremum_weights(const tensor<T>& x, const tensor<T>& y) {
  const fg::device d = x.device();
  const fg::shape& s = x.shape();
  const tensor<T> ind = dispatch::unrecorded_evaluate(cast<T>(equal(x, y)), s, d);
  const tensor<T> cnt = dispatch::unrecorded_sum_to(expr::leaf<T>{ind}, s, y.shape(), d);
  return dispatch::unrecorded_evaluate(ind / cnt, s, d);
}
/// max and min share the gradient equally among the elements equal to the result: g times
/// the weights, one recorded product (for higher orders, the weights are constants).
struct extremum_grad {
  template <class T>
  tensor<T> operator()(const tensor<T>& x, const tensor<T>& y, const tensor<T>& g, const axes&) const {
    return g * extremum_weights(x, y);
  }
};
/// all and any have no gradient (bool results); never called.
struct no_grad {
  template <class T>
  tensor<T> operator()(const tensor<T>& x, const tensor<T>&, const tensor<T>&, const axes&) const { return x; }
};
/// d prod / dx_i is the product of the other elements, which stays right where some are zero
/// (prod / x_i would divide by zero): with the reduced axes moved last and flattened, the
/// exclusive running products from the left and from the right multiply to it, as TensorFlow
/// computes it. Written with fusegrad ops, so it is recorded for higher orders.
struct prod_grad {
  template <class T>
  tensor<T> operator()(const tensor<T>& x, const tensor<T>&, const tensor<T>& g, const axes& ax) const {
    const reduce_plan p = plan_reduce(x.shape(), ax, "reduce_prod");
    if (x.rank() == 0) return g;
    std::vector<long> perm, inverse(x.rank());
    std::size_t kept = 1, folded = 1;
    for (std::size_t d = 0; d < x.rank(); ++d)
      if (!p.reduced[d]) perm.push_back(static_cast<long>(d)), kept *= x.shape()[d];
    for (std::size_t d = 0; d < x.rank(); ++d)
      if (p.reduced[d]) perm.push_back(static_cast<long>(d)), folded *= x.shape()[d];
    for (std::size_t i = 0; i < perm.size(); ++i) inverse[static_cast<std::size_t>(perm[i])] = static_cast<long>(i);
    const tensor<T> moved = transpose(x, perm);
    const tensor<T> rows = reshape(moved, fg::shape{kept, folded});
    const tensor<T> others = cumprod(rows, 1, true, false) * cumprod(rows, 1, true, true);
    return g * transpose(reshape(others, moved.shape()), inverse);
  }
};
}  // namespace eager

/// Largest element over axes (NaN propagates; -inf, or the lowest integer, over an empty axis, as
/// in TensorFlow); the gradient is shared among ties.
template <tensor_like X>
tensor<value_type_of<X>> reduce_max(const X& x, const axes& ax = {}, bool keepdims = false) {
  static_assert(!std::same_as<value_type_of<X>, bool>, "fg::reduce_max: use fg::reduce_any on bool tensors");
  return eager::reduce_recorded<ops::max_reducer<value_type_of<X>>>(x, ax, keepdims, "reduce_max",
                                                                    eager::extremum_grad{});
}
/// Alias of fg::reduce_max.
template <tensor_like X>
tensor<value_type_of<X>> max(const X& x, const axes& ax = {}, bool keepdims = false) { return reduce_max(x, ax, keepdims); }
/// Smallest element over axes (NaN propagates; +inf, or the highest integer, over an empty axis);
/// the gradient is shared among ties.
template <tensor_like X>
tensor<value_type_of<X>> reduce_min(const X& x, const axes& ax = {}, bool keepdims = false) {
  static_assert(!std::same_as<value_type_of<X>, bool>, "fg::reduce_min: use fg::reduce_all on bool tensors");
  return eager::reduce_recorded<ops::min_reducer<value_type_of<X>>>(x, ax, keepdims, "reduce_min",
                                                                    eager::extremum_grad{});
}
/// Alias of fg::reduce_min.
template <tensor_like X>
tensor<value_type_of<X>> min(const X& x, const axes& ax = {}, bool keepdims = false) { return reduce_min(x, ax, keepdims); }
/// Product over axes.
template <tensor_like X>
tensor<value_type_of<X>> reduce_prod(const X& x, const axes& ax = {}, bool keepdims = false) {
  static_assert(!std::same_as<value_type_of<X>, bool>, "fg::reduce_prod: product of a bool tensor; use fg::reduce_all");
  return eager::reduce_recorded<ops::prod_reducer<value_type_of<X>>>(x, ax, keepdims, "reduce_prod",
                                                                     eager::prod_grad{});
}
/// Alias of fg::reduce_prod.
template <tensor_like X>
tensor<value_type_of<X>> prod(const X& x, const axes& ax = {}, bool keepdims = false) { return reduce_prod(x, ax, keepdims); }
/// True where every element over axes is true.
template <tensor_like X>
tensor<bool> reduce_all(const X& x, const axes& ax = {}, bool keepdims = false) {
  static_assert(std::same_as<value_type_of<X>, bool>, "fg::reduce_all takes a bool tensor; compare first (x > 0)");
  return eager::reduce_recorded<ops::all_reducer>(x, ax, keepdims, "reduce_all", eager::no_grad{});
}
/// Alias of fg::reduce_all.
template <tensor_like X>
tensor<bool> all(const X& x, const axes& ax = {}, bool keepdims = false) { return reduce_all(x, ax, keepdims); }
/// True where some element over axes is true.
template <tensor_like X>
tensor<bool> reduce_any(const X& x, const axes& ax = {}, bool keepdims = false) {
  static_assert(std::same_as<value_type_of<X>, bool>, "fg::reduce_any takes a bool tensor; compare first (x > 0)");
  return eager::reduce_recorded<ops::any_reducer>(x, ax, keepdims, "reduce_any", eager::no_grad{});
}
/// Alias of fg::reduce_any.
template <tensor_like X>
tensor<bool> any(const X& x, const axes& ax = {}, bool keepdims = false) { return reduce_any(x, ax, keepdims); }

/// Index of the largest element along axis (first on ties), as int64.
template <tensor_like X>
tensor<std::int64_t> argmax(const X& x, long axis = 0) {
  return ops::run_boundary<std::int64_t>(ops::arg_extremum_rule<true>{.axis = axis}, x);
}
/// Index of the smallest element along axis (first on ties), as int64.
template <tensor_like X>
tensor<std::int64_t> argmin(const X& x, long axis = 0) {
  return ops::run_boundary<std::int64_t>(ops::arg_extremum_rule<false>{.axis = axis}, x);
}

namespace eager {
/// log(sum(exp(x))) of xt over the axes that `p` reduces, in p's kept shape, stably: the
/// maximum is subtracted before exp and added after, as `shift` (0 where the maximum is
/// infinite: all -inf, or a +inf, whose sums then give -inf and +inf). Three fused passes and
/// no recording: reduce_logsumexp records the whole computation as one op.
template <class T>
tensor<T> logsumexp_kept(const tensor<T>& xt, const reduce_plan& p, tensor<T>& shift) {
  const fg::device d = xt.device();
  const tensor<T> m = reduce_with<ops::max_reducer<T>>(expr::leaf<T>{xt}, p, xt.shape(), d);
  shift = dispatch::unrecorded_evaluate(where(abs(m) < std::numeric_limits<T>::infinity(), m, T(0)), p.keep, d);
  const tensor<T> s = reduce_with<ops::sum_reducer<T>>(exp(xt - shift), p, xt.shape(), d);
  return dispatch::unrecorded_evaluate(log(s) + shift, p.keep, d);
}
}  // namespace eager

/// log(sum(exp(x))) over axes (-inf over an empty axis), computed stably by subtracting the
/// maximum. Recorded as one op whose gradient is softmax, g / sum(e) * e with e = exp(x - max)
/// (TensorFlow's arithmetic; written with fusegrad ops, so that a tape recording the backward
/// step sees the sum depend on x, for higher orders).
template <tensor_like X>
tensor<value_type_of<X>> reduce_logsumexp(const X& x, const axes& ax = {}, bool keepdims = false) {
  using T = value_type_of<X>;
  static_assert(std::floating_point<T>, "fg::reduce_logsumexp needs a floating-point tensor");
  const tensor<T> xt = eval(x);
  const auto plan = eager::plan_reduce(xt.shape(), ax, "reduce_logsumexp");
  tensor<T> shift;
  const tensor<T> r = eager::logsumexp_kept(xt, plan, shift);
  eager::epilogue("reduce_logsumexp", r, {xt.shape()}, {xt.id()}, [xt, shift, ax](const tensor<T>& g, auto) {
    const tensor<T> e = exp(xt - shift);
    return std::array{tensor<T>(g / reduce_sum(e, ax, true) * e)};
  });
  return eager::finish_reduce(r, plan, keepdims);
}
/// Alias of fg::reduce_logsumexp.
template <tensor_like X>
tensor<value_type_of<X>> logsumexp(const X& x, const axes& ax = {}, bool keepdims = false) { return reduce_logsumexp(x, ax, keepdims); }

/// The reductions of a float32 or float64 tensor, compiled once per program with
/// FUSEGRAD_SEPARATE_ENGINES (Note [shared op tables]): P is `extern` here, empty in the
/// engines' source file.
#define FG_SHARED_REDUCTIONS(P, T)                                                            \
  P template tensor<T> reduce_sum<tensor<T>>(const tensor<T>&, const axes&, bool);            \
  P template tensor<T> reduce_mean<tensor<T>>(const tensor<T>&, const axes&, bool);           \
  P template tensor<T> reduce_max<tensor<T>>(const tensor<T>&, const axes&, bool);            \
  P template tensor<T> reduce_min<tensor<T>>(const tensor<T>&, const axes&, bool);            \
  P template tensor<T> reduce_logsumexp<tensor<T>>(const tensor<T>&, const axes&, bool);
#if defined(FUSEGRAD_SEPARATE_ENGINES)
FG_SHARED_REDUCTIONS(extern, float)
FG_SHARED_REDUCTIONS(extern, double)
#endif
}  // namespace fusegrad
