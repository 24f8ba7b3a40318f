#pragma once
/// \file Scans along an axis: fg::cumsum and fg::cumprod, with TensorFlow's exclusive and
/// reverse options.

#include <array>
#include <utility>

#include "../autodiff/record_op.hpp"
#include "evaluate.hpp"
#include "../ops/binary.hpp"

namespace fusegrad {
namespace detail {
/// Running fold of x along axis a with `step(acc, v)` from `init`; exclusive leaves each
/// element out of its own result, reverse runs from the end. A host kernel: a device operand
/// is copied to the host and the result back (docs/device.md).
template <class T, class Step>
tensor<T> scan_host(const tensor<T>& x, std::size_t a, bool exclusive, bool reverse, T init, Step step) {
  const fg::shape& s = x.shape();
  std::size_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < a; ++d) outer *= s[d];
  for (std::size_t d = a + 1; d < s.rank(); ++d) inner *= s[d];
  const std::size_t n = s[a];
  const tensor<T> hx = host_operand(x, "scan");
  tensor<T> r(s, fg::device::cpu());
  const T* src = hx.data();
  T* dst = r.buffer()->data;
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t i = 0; i < inner; ++i) {
      const std::size_t base = o * n * inner + i;
      T acc = init;
      for (std::size_t j = 0; j < n; ++j) {
        const std::size_t p = base + (reverse ? n - 1 - j : j) * inner;
        if (exclusive) {
          dst[p] = acc;
          acc = step(acc, src[p]);
        } else {
          acc = step(acc, src[p]);
          dst[p] = acc;
        }
      }
    }
  return r.to(x.device());
}

/// The evaluated operand of a scan, checked, and its axis.
template <class X>
std::pair<tensor<value_type_of<X>>, std::size_t> scan_operand(const X& x, long axis, const char* op) {
  static_assert(!std::same_as<value_type_of<X>, bool>, "fusegrad: cumsum and cumprod need a numeric tensor; fg::cast<int32_t>(x) first");
  tensor<value_type_of<X>> t = eval(x);
  FG_CHECK(t.defined(), value_error, "fg::", op, ": the operand is undefined (an unconnected gradient?)");
  FG_CHECK(t.rank() > 0, shape_error, "fg::", op, ": needs a tensor of rank >= 1, got a scalar; reshape it to (1,) first");
  const std::size_t a = normalize_axis(axis, t.rank(), op);
  return {std::move(t), a};
}
}  // namespace detail

/// Running sums along axis (tf.math.cumsum): exclusive starts each from 0 without the element
/// itself, reverse sums from the end.
template <tensor_like X>
tensor<value_type_of<X>> cumsum(const X& x, long axis = 0, bool exclusive = false, bool reverse = false) {
  using T = value_type_of<X>;
  const auto [t, a] = detail::scan_operand(x, axis, "cumsum");
  tensor<T> y = detail::scan_host<T>(t, a, exclusive, reverse, T(0), ops::add_op{});  // signed integers wrap around
  // Element j feeds the results after it (or before it, reversed): the gradient is the same
  // scan of g run the other way.
  detail::record_op<T, 1>("cumsum", {t.id()}, y, [axis, exclusive, reverse](const tensor<T>& g, auto) {
    return std::array{cumsum(g, axis, exclusive, !reverse)};
  });
  return y;
}

/// Running products along axis (tf.math.cumprod), with cumsum's exclusive and reverse options.
template <tensor_like X>
tensor<value_type_of<X>> cumprod(const X& x, long axis = 0, bool exclusive = false, bool reverse = false) {
  using T = value_type_of<X>;
  const auto op = detail::scan_operand(x, axis, "cumprod");
  const tensor<T>& t = op.first;
  const std::size_t a = op.second;
  tensor<T> y = detail::scan_host<T>(t, a, exclusive, reverse, T(1), ops::multiply_op{});
  // d y_j / d x_i = y_j / x_i for every j that includes x_i, so the gradient is the reversed
  // cumsum of g * y divided by x. Exact only while no element of x is zero (TensorFlow's rule).
  detail::record_op<T, 1>("cumprod", {t.id()}, y, [t, y, axis, exclusive, reverse](const tensor<T>& g, auto) {
    return std::array{tensor<T>(cumsum(g * y, axis, exclusive, !reverse) / t)};
  });
  return y;
}
}  // namespace fusegrad
