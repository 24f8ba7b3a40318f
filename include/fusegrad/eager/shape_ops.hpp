#pragma once
/// \file Ops that rearrange elements: transpose, expand_dims, squeeze, broadcast_to, concat,
/// stack, tile; and the recorded strided gather/scatter pair that slicing and their gradients share.
/// Note [strided walks]: most rearrangements read their input at positions that an offset and
/// one (possibly zero or negative) stride per output axis describe, and one function walks
/// such a pattern (walk). Slicing and concat's gradient gather through a walk and their
/// gradients scatter through the same walk (strided_gather, strided_scatter), each the other's
/// gradient, so their gradients of every order stay within these two recorded ops. transpose,
/// broadcast_to and tile copy through a walk too; their gradients are a transpose, a sum over
/// the broadcast axes and a sum over the copies.

#include <algorithm>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "../autodiff/record_op.hpp"
#include "../eval/creation.hpp"
#include "evaluate.hpp"
#include "reduce.hpp"
#include "reshape.hpp"

namespace fusegrad {
namespace detail {

/// "[1, 0, 2]": a list of integers for error messages.
inline std::string list_str(std::span<const long> v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

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

/// The walk that takes elements begin .. begin + len of `axis` of a contiguous tensor of shape s.
inline strided_walk axis_range_walk(const fg::shape& s, std::size_t axis, std::size_t begin, std::size_t len) {
  const auto st = contiguous_strides(s);
  strided_walk w;
  w.offset = static_cast<index_t>(begin) * st[axis];
  for (std::size_t d = 0; d < s.rank(); ++d) w.push(d == axis ? len : s[d], st[d]);
  return w;
}

template <class T>
tensor<T> strided_scatter(const tensor<T>& g, const strided_walk& w, const fg::shape& in);

/// The elements of x that w visits, in shape `out` (recorded; its gradient scatters back).
template <class T>
tensor<T> strided_gather(const tensor<T>& x, const strided_walk& w, const fg::shape& out, const char* op) {
  const tensor<T> hx = host_operand(x, op);
  tensor<T> r(out, fg::device::cpu());
  const T* src = hx.data();
  T* dst = r.buffer()->data;
  walk(w, [&](std::size_t k, index_t s) { dst[k] = src[s]; });
  r = r.to(x.device());
  record_op<T, 1>(op, {x.id()}, r, [w, in = x.shape()](const tensor<T>& g, auto) {
    return std::array{strided_scatter(g, w, in)};
  });
  return r;
}

/// Zeros of shape `in` with g written where w points; w visits no position twice. The
/// gradient of strided_gather, recorded with strided_gather as its own gradient.
template <class T>
tensor<T> strided_scatter(const tensor<T>& g, const strided_walk& w, const fg::shape& in) {
  const tensor<T> hg = host_operand(g, "slice_grad");
  tensor<T> r = fill<T>(in, T(0), fg::device::cpu());
  const T* src = hg.data();
  T* dst = r.buffer()->data;
  walk(w, [&](std::size_t k, index_t s) { dst[s] = src[k]; });
  r = r.to(g.device());
  record_op<T, 1>("slice_grad", {g.id()}, r, [w, out = g.shape()](const tensor<T>& gg, auto) {
    return std::array{strided_gather(gg, w, out, "slice")};
  });
  return r;
}

}  // namespace detail

/// x with its axes permuted: axis d of the result is axis perm[d] of x (negative counts from the end).
template <tensor_like X>
tensor<value_type_of<X>> transpose(const X& x, const std::vector<long>& perm) {
  using T = value_type_of<X>;
  const tensor<T> t = eval(x);
  FG_CHECK(t.defined(), value_error, "fg::transpose: the operand is undefined (an unconnected gradient?)");
  const std::size_t r = t.rank();
  FG_CHECK(perm.size() == r, shape_error, "fg::transpose: perm ", detail::list_str(perm), " has ", perm.size(),
           " entries but the tensor has shape ", t.shape(), " (rank ", r, "); give one entry per axis");
  std::vector<std::size_t> p(r);
  std::vector<bool> seen(r, false);
  bool identity = true;
  for (std::size_t d = 0; d < r; ++d) {
    p[d] = detail::normalize_axis(perm[d], r, "transpose");
    FG_CHECK(!seen[p[d]], shape_error, "fg::transpose: perm ", detail::list_str(perm), " names axis ", p[d],
             " twice; it must be a permutation of 0 .. ", r - 1);
    seen[p[d]] = true;
    identity = identity && p[d] == d;
  }
  if (identity) return reshape(t, t.shape());  // same buffer, new identity, recorded
  const auto st = detail::contiguous_strides(t.shape());
  detail::strided_walk w;
  fg::shape out;
  std::vector<long> inverse(r);
  for (std::size_t d = 0; d < r; ++d) {
    w.push(t.shape()[p[d]], st[p[d]]);
    out.push_back(t.shape()[p[d]]);
    inverse[p[d]] = static_cast<long>(d);
  }
  const tensor<T> ht = detail::host_operand(t, "transpose");
  tensor<T> y(out, fg::device::cpu());
  const T* src = ht.data();
  T* dst = y.buffer()->data;
  detail::walk(w, [&](std::size_t k, index_t s) { dst[k] = src[s]; });
  y = y.to(t.device());
  detail::record_op<T, 1>("transpose", {t.id()}, y, [inverse](const tensor<T>& g, auto) {
    return std::array{transpose(g, inverse)};
  });
  return y;
}
/// x with its axes in reverse order (the matrix transpose for rank 2).
template <tensor_like X>
tensor<value_type_of<X>> transpose(const X& x) {
  const tensor<value_type_of<X>> t = eval(x);
  std::vector<long> perm(t.rank());
  for (std::size_t d = 0; d < t.rank(); ++d) perm[d] = static_cast<long>(t.rank() - 1 - d);
  return transpose(t, perm);
}
/// Alias of fg::transpose with an explicit permutation.
template <tensor_like X>
tensor<value_type_of<X>> permute(const X& x, const std::vector<long>& perm) { return transpose(x, perm); }

/// x with a new axis of size 1 inserted at `axis` (from -(rank + 1) to rank). Shares x's buffer.
template <tensor_like X>
tensor<value_type_of<X>> expand_dims(const X& x, long axis) {
  const tensor<value_type_of<X>> t = eval(x);
  const long r = static_cast<long>(t.rank());
  FG_CHECK(axis >= -r - 1 && axis <= r, index_error, "fg::expand_dims: axis ", axis,
           " is out of range for a tensor of shape ", t.shape(), " (valid: ", -r - 1, " to ", r, ")");
  fg::shape s = t.shape();
  s.insert(static_cast<std::size_t>(axis < 0 ? axis + r + 1 : axis), 1);
  return reshape(t, s);
}

/// x without the listed axes of size 1 (without all its size-1 axes by default). Shares x's buffer.
template <tensor_like X>
tensor<value_type_of<X>> squeeze(const X& x, const axes& ax = {}) {
  const tensor<value_type_of<X>> t = eval(x);
  const fg::shape& s = t.shape();
  std::vector<bool> drop(s.rank(), false);
  for (std::size_t d = 0; d < s.rank(); ++d) drop[d] = ax.all && s[d] == 1;
  if (!ax.all)
    for (long a : ax.list) {
      const std::size_t d = detail::normalize_axis(a, s.rank(), "squeeze");
      FG_CHECK(!drop[d], shape_error, "fg::squeeze: axis ", a, " is listed twice");
      FG_CHECK(s[d] == 1, shape_error, "fg::squeeze: cannot squeeze axis ", a, " of a tensor of shape ", s,
               ": its size is ", s[d], ", not 1; list only axes of size 1");
      drop[d] = true;
    }
  fg::shape out;
  for (std::size_t d = 0; d < s.rank(); ++d)
    if (!drop[d]) out.push_back(s[d]);
  return reshape(t, out);
}

/// x broadcast to shape s by numpy's rules (x's dimensions align to the right; each equals
/// the target's or is 1). Its gradient sums over the broadcast axes.
template <tensor_like X>
tensor<value_type_of<X>> broadcast_to(const X& x, const fg::shape& s) {
  using T = value_type_of<X>;
  const tensor<T> t = eval(x);
  FG_CHECK(t.defined(), value_error, "fg::broadcast_to: the operand is undefined (an unconnected gradient?)");
  const fg::shape& in = t.shape();
  detail::checked_elements(s, "broadcast_to");
  FG_CHECK(s.rank() >= in.rank(), shape_error, "fg::broadcast_to: cannot broadcast shape ", in, " to ", s,
           ": the target has fewer dimensions; give a target of rank >= ", in.rank());
  if (s == in) return reshape(t, s);
  const std::size_t off = s.rank() - in.rank();
  const auto st = detail::contiguous_strides(in);
  detail::strided_walk w;
  for (std::size_t d = 0; d < s.rank(); ++d) {
    const std::size_t di = d < off ? 1 : in[d - off];
    FG_CHECK(di == s[d] || di == 1, shape_error, "fg::broadcast_to: cannot broadcast shape ", in, " to ", s,
             " (dimension ", d, " of the target: ", di, " vs ", s[d], "); each dimension must equal the target's or be 1");
    w.push(s[d], di == 1 ? 0 : st[d - off]);
  }
  const tensor<T> ht = detail::host_operand(t, "broadcast_to");
  tensor<T> y(s, fg::device::cpu(), "broadcast_to");
  const T* src = ht.data();
  T* dst = y.buffer()->data;
  detail::walk(w, [&](std::size_t k, index_t p) { dst[k] = src[p]; });
  y = y.to(t.device());
  detail::record_op<T, 1>("broadcast_to", {t.id()}, y, [in](const tensor<T>& g, auto) {
    return std::array{detail::sum_to(expr::leaf<T>{g}, g.shape(), in)};
  });
  return y;
}

/// The tensors joined along `axis`; all have one rank and equal dimensions except along axis.
template <class T>
tensor<T> concat(const std::vector<tensor<T>>& xs, long axis = 0) {
  FG_CHECK(!xs.empty(), value_error, "fg::concat: needs at least one tensor, got an empty list");
  std::vector<tensor<T>> hs;
  for (const auto& x : xs) {
    hs.push_back(detail::host_operand(x, "concat"));
    detail::check_same_device("concat", xs[0].device(), x.device());
  }
  const fg::shape& s0 = xs[0].shape();
  FG_CHECK(s0.rank() > 0, shape_error,
           "fg::concat: cannot concatenate rank-0 tensors (scalars); use fg::stack to make a vector of them");
  const std::size_t a = detail::normalize_axis(axis, s0.rank(), "concat");
  std::size_t total = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const fg::shape& si = xs[i].shape();
    FG_CHECK(si.rank() == s0.rank(), shape_error, "fg::concat: tensor ", i, " has shape ", si, " (rank ", si.rank(),
             ") but tensor 0 has shape ", s0, " (rank ", s0.rank(), "); all tensors need the same rank");
    for (std::size_t d = 0; d < s0.rank(); ++d)
      FG_CHECK(d == a || si[d] == s0[d], shape_error, "fg::concat: tensor ", i, " has shape ", si,
               " but tensor 0 has shape ", s0, " (dimension ", d, ": ", si[d], " vs ", s0[d],
               "); all dimensions except the concatenation axis ", a, " must match");
    total = detail::checked_sum(total, si[a], "concat", [&] { return detail::cat("the result of joining tensor ", i, " of shape ", si); });
  }
  fg::shape out = s0;
  out[a] = total;
  std::size_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < a; ++d) outer *= s0[d];
  for (std::size_t d = a + 1; d < s0.rank(); ++d) inner *= s0[d];
  tensor<T> y(out, fg::device::cpu(), "concat");
  T* dst = y.buffer()->data;
  for (std::size_t o = 0; o < outer; ++o)
    for (const auto& x : hs) {
      const std::size_t chunk = x.shape()[a] * inner;
      dst = std::copy(x.data() + o * chunk, x.data() + (o + 1) * chunk, dst);
    }
  y = y.to(xs[0].device());
  std::vector<tensor_id> ids;
  std::vector<std::size_t> begins, lens;
  for (const auto& x : xs) {
    ids.push_back(x.id());
    begins.push_back(lens.empty() ? 0 : begins.back() + lens.back());
    lens.push_back(x.shape()[a]);
  }
  detail::record_op<T>("concat", ids, y, [a, begins, lens](const tensor<T>& g, std::span<const bool> needed) {
    std::vector<tensor<T>> r(begins.size());
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (!needed[i]) continue;
      fg::shape si = g.shape();
      si[a] = lens[i];
      r[i] = detail::strided_gather(g, detail::axis_range_walk(g.shape(), a, begins[i], lens[i]), si, "slice");
    }
    return r;
  });
  return y;
}
/// The tensors joined along `axis` (`fg::concat({a, b}, 1)`).
template <class T>
tensor<T> concat(std::initializer_list<tensor<T>> xs, long axis = 0) { return concat(std::vector<tensor<T>>(xs), axis); }

/// The tensors, all of one shape, stacked along a new axis at `axis` (from -(rank + 1) to rank).
template <class T>
tensor<T> stack(const std::vector<tensor<T>>& xs, long axis = 0) {
  FG_CHECK(!xs.empty(), value_error, "fg::stack: needs at least one tensor, got an empty list");
  for (const auto& x : xs) {
    FG_CHECK(x.defined(), value_error, "fg::stack: an operand is undefined (an unconnected gradient?)");
    detail::check_same_device("stack", xs[0].device(), x.device());
  }
  const fg::shape& s0 = xs[0].shape();
  const long r = static_cast<long>(s0.rank());
  FG_CHECK(axis >= -r - 1 && axis <= r, index_error, "fg::stack: axis ", axis, " is out of range for tensors of shape ",
           s0, " (valid: ", -r - 1, " to ", r, ")");
  std::vector<tensor<T>> ys;
  ys.reserve(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    FG_CHECK(xs[i].shape() == s0, shape_error, "fg::stack: tensor ", i, " has shape ", xs[i].shape(),
             " but tensor 0 has shape ", s0, "; stacked tensors must all have the same shape");
    ys.push_back(expand_dims(xs[i], axis));
  }
  return concat(ys, axis < 0 ? axis + r + 1 : axis);
}
/// The tensors stacked along a new axis (`fg::stack({a, b}, 0)`).
template <class T>
tensor<T> stack(std::initializer_list<tensor<T>> xs, long axis = 0) { return stack(std::vector<tensor<T>>(xs), axis); }

/// x repeated multiples[d] times along each axis d (tf.tile); its gradient sums over the copies.
template <tensor_like X>
tensor<value_type_of<X>> tile(const X& x, const std::vector<long>& multiples) {
  using T = value_type_of<X>;
  const tensor<T> t = eval(x);
  FG_CHECK(t.defined(), value_error, "fg::tile: the operand is undefined (an unconnected gradient?)");
  const fg::shape& s = t.shape();
  FG_CHECK(multiples.size() == s.rank(), shape_error, "fg::tile: multiples ", detail::list_str(multiples), " has ",
           multiples.size(), " entries but the tensor has shape ", s, " (rank ", s.rank(), "); give one per axis");
  const auto st = detail::contiguous_strides(s);
  detail::strided_walk w;  // axis d becomes (copy, position): strides 0 and st[d]
  fg::shape out;
  for (std::size_t d = 0; d < s.rank(); ++d) {
    FG_CHECK(multiples[d] >= 0, value_error, "fg::tile: multiple ", multiples[d], " for axis ", d,
             " is negative; multiples must be >= 0");
    const auto m = static_cast<std::size_t>(multiples[d]);
    if (m != 1) w.push(m, 0);
    w.push(s[d], st[d]);
    out.push_back(m * s[d]);  // wraps only when the check below fails
  }
  detail::checked_product(w.dims, "tile", [&] {
    return detail::cat("the result of tiling shape ", s, " by multiples ", detail::list_str(multiples));
  });
  const tensor<T> ht = detail::host_operand(t, "tile");
  tensor<T> y(out, fg::device::cpu(), "tile");
  const T* src = ht.data();
  T* dst = y.buffer()->data;
  detail::walk(w, [&](std::size_t k, index_t p) { dst[k] = src[p]; });
  y = y.to(t.device());
  detail::record_op<T, 1>("tile", {t.id()}, y, [s, multiples](const tensor<T>& g, auto) {
    // One axis at a time, so the split shape has rank + 1 at most.
    tensor<T> acc = g;
    for (std::size_t d = 0; d < s.rank(); ++d) {
      if (multiples[d] == 1) continue;
      fg::shape split = acc.shape();
      split[d] = s[d];
      split.insert(d, static_cast<std::size_t>(multiples[d]));
      acc = reduce_sum(reshape(acc, split), axes(static_cast<long>(d)));
    }
    return std::array{acc};
  });
  return y;
}
}  // namespace fusegrad
