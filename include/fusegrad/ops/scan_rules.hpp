#pragma once
/// \file (Used with <fusegrad/eager/boundary.hpp>, which runs these rules.) The rules of the scans
/// along an axis (Note [boundary ops]): cumsum and cumprod, with TensorFlow's exclusive and
/// reverse options.

#include <array>
#include <cstddef>
#include <span>
#include <utility>

#include "binary.hpp"
#include "boundary.hpp"

namespace fusegrad::ops {
/// A running fold along one axis: the operand seen as (outer, n, inner) around it.
struct scan_plan {
  long axis = 0;
  bool exclusive = false;  ///< leave each element out of its own result
  bool reverse = false;    ///< run from the end
  std::size_t outer = 1, n = 0, inner = 1;

  scan_plan(long ax, bool excl, bool rev) : axis(ax), exclusive(excl), reverse(rev) {}
  fg::shape plan(const fg::shape& s, const char* op) {
    FG_CHECK(s.rank() > 0, shape_error, "fg::", op, ": needs a tensor of rank >= 1, got a scalar; reshape it to (1,) first");
    const std::size_t a = core::normalize_axis(axis, s.rank(), op);
    for (std::size_t d = 0; d < a; ++d) outer *= s[d];
    for (std::size_t d = a + 1; d < s.rank(); ++d) inner *= s[d];
    n = s[a];
    return s;
  }
  /// dst = the fold of x with `step(acc, v)` from `init`.
  template <class T, class Step>
  void run(T* dst, const tensor<T>& x, T init, Step step) const {
    const T* src = x.data();
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
  }
};

/// Running sums; signed integers wrap around (add_op).
struct cumsum_rule : scan_plan {
  static constexpr const char* name = "cumsum";
  using scan_plan::scan_plan;
  fg::shape shape(const fg::shape& s) { return plan(s, name); }
  template <class T>
  void host(T* dst, const tensor<T>& x) const { run(dst, x, T(0), add_op{}); }
  // Element j feeds the results after it (or before it, reversed): the gradient is the same
  // scan of g run the other way.
  template <class T>
  std::array<tensor<T>, 1> backward(const tensor<T>& g, std::span<const bool>) const {
    return {cumsum(g, axis, exclusive, !reverse)};
  }
};

/// Running products.
struct cumprod_rule : scan_plan {
  static constexpr const char* name = "cumprod";
  using scan_plan::scan_plan;
  fg::shape shape(const fg::shape& s) { return plan(s, name); }
  template <class T>
  void host(T* dst, const tensor<T>& x) const { run(dst, x, T(1), multiply_op{}); }
  template <class T>
  std::pair<tensor<T>, tensor<T>> saved(const tensor<T>& y, const tensor<T>& x) const { return {x, y}; }
  // d y_j / d x_i = y_j / x_i for every j that includes x_i, so the gradient is the reversed
  // cumsum of g * y divided by x. Exact only while no element of x is zero (TensorFlow's rule).
  template <class T>
  std::array<tensor<T>, 1> backward(const tensor<T>& g, std::span<const bool>, const std::pair<tensor<T>, tensor<T>>& xy) const {
    const tensor<T> gy = g * xy.second;
    return {tensor<T>(cumsum(gy, axis, exclusive, !reverse) / xy.first)};
  }
};
}  // namespace fusegrad::ops
