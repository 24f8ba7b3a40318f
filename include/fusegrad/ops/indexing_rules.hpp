#pragma once
/// \file (Used with <fusegrad/eager/boundary.hpp>, which runs these rules.) The rules of the
/// indexing ops (Note [boundary ops]): gather, its scatter-add gradient, one_hot, argmax and
/// argmin.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "boundary.hpp"

namespace fusegrad::ops {
/// Where gather's slices lie: params of shape (outer, n, inner) around the gathered axis.
struct gather_plan {
  std::size_t a = 0, outer = 1, n = 0, inner = 1;
  fg::shape params{};

  /// The result's shape: params.shape[:a] + indices.shape + params.shape[a+1:].
  fg::shape plan(const fg::shape& p, const fg::shape& idx, std::size_t axis) {
    a = axis;
    params = p;
    fg::shape out;
    for (std::size_t d = 0; d < a; ++d) {
      outer *= p[d];
      out.push_back(p[d]);
    }
    n = p[a];
    for (std::size_t d : idx) out.push_back(d);
    for (std::size_t d = a + 1; d < p.rank(); ++d) {
      inner *= p[d];
      out.push_back(p[d]);
    }
    return out;
  }
};

/// The slices of params (operand 0) along `axis` picked by the integer indices (operand 1,
/// not differentiated); the gradient scatters g back (gather_grad_rule).
struct gather_rule : gather_plan {
  static constexpr const char* name = "gather";
  static constexpr std::size_t differentiable = 1;
  long axis = 0;

  explicit gather_rule(long ax) : axis(ax) {}
  fg::shape shape(const fg::shape& p, const fg::shape& idx) {
    FG_CHECK(p.rank() > 0, shape_error, "fg::gather: params must have rank >= 1, got a scalar");
    return plan(p, idx, core::normalize_axis(axis, p.rank(), "gather"));
  }
  template <class T, class Ix>
  void host(T* dst, const tensor<T>& p, const tensor<Ix>& idx) const {
    const Ix* ix = idx.data();
    const std::size_t m = idx.size();
    for (std::size_t j = 0; j < m; ++j)
      FG_CHECK(ix[j] >= 0 && static_cast<std::size_t>(ix[j]) < n, index_error, "fg::gather: index ", ix[j],
               " (element ", j, " of indices) is out of range for axis ", a, " of params with shape ", params,
               " (valid: 0 to ", static_cast<long>(n) - 1, ")");
    for (std::size_t o = 0; o < outer; ++o)
      for (std::size_t j = 0; j < m; ++j) {
        const T* src = p.data() + (o * n + static_cast<std::size_t>(ix[j])) * inner;
        dst = std::copy(src, src + inner, dst);
      }
  }
  template <class T, class Ix>
  tensor<Ix> saved(const tensor<T>&, const tensor<T>&, const tensor<Ix>& idx) const { return idx; }
  template <class T, class Ix>
  std::array<tensor<T>, 1> backward(const tensor<T>& g, std::span<const bool>, const tensor<Ix>& idx) const;
};

/// Zeros of params' shape with g's slices (operand 0) added at the indices (operand 1) along
/// the axis; repeated indices add up. The gradient of gather_rule, with gather_rule as its own.
struct gather_grad_rule : gather_plan {
  static constexpr const char* name = "gather_grad";
  static constexpr std::size_t differentiable = 1;

  explicit gather_grad_rule(const gather_plan& p) : gather_plan(p) {}
  fg::shape shape(const fg::shape&, const fg::shape&) { return params; }
  template <class T, class Ix>
  void host(T* dst, const tensor<T>& g, const tensor<Ix>& idx) const {
    std::fill(dst, dst + params.elements(), T(0));
    const Ix* ix = idx.data();
    const T* src = g.data();
    for (std::size_t o = 0; o < outer; ++o)
      for (std::size_t j = 0; j < idx.size(); ++j) {
        T* to = dst + (o * n + static_cast<std::size_t>(ix[j])) * inner;
        for (std::size_t k = 0; k < inner; ++k) to[k] += *src++;
      }
  }
  template <class T, class Ix>
  tensor<Ix> saved(const tensor<T>&, const tensor<T>&, const tensor<Ix>& idx) const { return idx; }
  template <class T, class Ix>
  std::array<tensor<T>, 1> backward(const tensor<T>& gg, std::span<const bool>, const tensor<Ix>& idx) const {
    return {ops::run_boundary<T>(gather_rule(static_cast<long>(a)), gg, idx)};
  }
};

template <class T, class Ix>
std::array<tensor<T>, 1> gather_rule::backward(const tensor<T>& g, std::span<const bool>, const tensor<Ix>& idx) const {
  return {ops::run_boundary<T>(gather_grad_rule(*this), g, idx)};
}

/// A one-hot encoding of integer indices: shape indices.shape + (depth,), `on` at each index and
/// `off` elsewhere; an index outside 0 .. depth - 1 gives a row of `off`. Not differentiated.
template <class T>
struct one_hot_rule {
  static constexpr const char* name = "one_hot";
  static constexpr std::size_t differentiable = 0;
  long depth = 0;
  T on = T(1), off = T(0);

  fg::shape shape(const fg::shape& idx) const {
    FG_CHECK(depth >= 0, value_error, "fg::one_hot: depth must be >= 0, got ", depth);
    fg::shape out = idx;
    out.push_back(static_cast<std::size_t>(depth));
    return out;
  }
  template <class Ix>
  void host(T* dst, const tensor<Ix>& idx) const {
    const auto d = static_cast<std::size_t>(depth);
    std::fill(dst, dst + idx.size() * d, off);
    for (std::size_t j = 0; j < idx.size(); ++j) {
      const Ix i = idx.data()[j];
      if (i >= 0 && i < depth) dst[j * d + static_cast<std::size_t>(i)] = on;
    }
  }
};

/// The index of the largest (Max) or smallest element along an axis, first on ties, a NaN winning
/// as in numpy; int64 indices, not differentiable.
template <bool Max>
struct arg_extremum_rule {
  static constexpr const char* name = Max ? "argmax" : "argmin";
  static constexpr std::size_t differentiable = 0;
  long axis = 0;
  std::size_t outer = 1, n = 0, inner = 1;

  fg::shape shape(const fg::shape& s) {
    FG_CHECK(s.rank() > 0, shape_error, "fg::", name, ": needs a tensor of rank >= 1, got a scalar");
    const std::size_t a = core::normalize_axis(axis, s.rank(), name);
    FG_CHECK(s[a] > 0, shape_error, "fg::", name, ": axis ", axis, " of shape ", s, " is empty");
    fg::shape out;
    for (std::size_t d = 0; d < s.rank(); ++d) {
      if (d < a) outer *= s[d];
      if (d > a) inner *= s[d];
      if (d != a) out.push_back(s[d]);
    }
    n = s[a];
    return out;
  }
  template <class T>
  void host(std::int64_t* dst, const tensor<T>& t) const {
    const T* v = t.data();
    for (std::size_t o = 0; o < outer; ++o)
      for (std::size_t i = 0; i < inner; ++i) {
        std::size_t best = 0;
        const T* base = v + o * n * inner + i;
        for (std::size_t k = 1; k < n; ++k) {
          const T c = base[k * inner], b = base[best * inner];
          if constexpr (std::is_floating_point_v<T>)
            if (b != b) break;  // NaN wins, as in numpy
          if ((Max ? c > b : c < b) || c != c) best = k;
        }
        dst[o * inner + i] = static_cast<std::int64_t>(best);
      }
  }
};
}  // namespace fusegrad::ops
