#pragma once
/// \file Strided walks: the source positions that a rearranging copy (transpose, broadcast_to,
/// tile, slicing, concat's gradient) visits, as index arithmetic the boundary-op rules share.
/// Note [strided walks]: most rearrangements read their input at positions that an offset and
/// one (possibly zero or negative) stride per output axis describe, and one function walks
/// such a pattern (walk). Slicing and concat's gradient gather through a walk and their
/// gradients scatter through the same walk (ops::slice_rule, ops::slice_grad_rule), each the
/// other's gradient, so their gradients of every order stay within these two recorded ops.
/// transpose, broadcast_to and tile copy through a walk too; their gradients are a transpose,
/// a sum over the broadcast axes and a sum over the copies.

#include <cstddef>
#include <vector>

#include "../core/shape.hpp"

namespace fusegrad::ops {

/// The source positions a strided copy visits, in row-major order of its result: element k at
/// multi-index i reads offset + sum_d i_d * strides[d] (Note [strided walks]).
struct strided_walk {
  index_t offset = 0;
  std::vector<std::size_t> dims;
  std::vector<index_t> strides;

  void push(std::size_t d, index_t s) {
    dims.push_back(d);
    strides.push_back(s);
  }
  std::size_t elements() const {
    std::size_t n = 1;
    for (std::size_t d : dims) n *= d;
    return n;
  }
};

/// Calls f(k, source position) for every element k of the walk, in order.
template <class F>
void walk(const strided_walk& w, F&& f) {
  const std::size_t n = w.elements(), r = w.dims.size();
  if (n == 0) return;
  if (r == 0) {
    f(std::size_t{0}, w.offset);
    return;
  }
  std::vector<std::size_t> idx(r, 0);
  const std::size_t inner = w.dims[r - 1];
  const index_t step = w.strides[r - 1];
  index_t base = w.offset;
  for (std::size_t k = 0; k < n; k += inner) {
    for (std::size_t j = 0; j < inner; ++j) f(k + j, base + static_cast<index_t>(j) * step);
    for (std::size_t d = r - 1; d-- > 0;) {  // odometer over the outer axes
      base += w.strides[d];
      if (++idx[d] < w.dims[d]) break;
      base -= w.strides[d] * static_cast<index_t>(w.dims[d]);
      idx[d] = 0;
    }
  }
}

/// dst[k] = src[position k of w] for every element k of the walk.
template <class T>
void copy_walk(const strided_walk& w, const T* src, T* dst) {
  walk(w, [&](std::size_t k, index_t s) { dst[k] = src[s]; });
}

/// The walk that takes elements begin .. begin + len of `axis` of a contiguous tensor of shape s.
inline strided_walk axis_range_walk(const fg::shape& s, std::size_t axis, std::size_t begin, std::size_t len) {
  const auto st = core::contiguous_strides(s);
  strided_walk w;
  w.offset = static_cast<index_t>(begin) * st[axis];
  for (std::size_t d = 0; d < s.rank(); ++d) w.push(d == axis ? len : s[d], st[d]);
  return w;
}
}  // namespace fusegrad::ops
