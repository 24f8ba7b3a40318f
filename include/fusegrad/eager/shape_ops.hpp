#pragma once
/// \file Ops that rearrange elements: transpose, expand_dims, squeeze, broadcast_to, concat,
/// stack, tile. Their rules (shape checks, host kernels, gradients) are in ops/shape_rules.hpp
/// and run through ops::run_boundary (Note [boundary ops]); expand_dims and squeeze are reshapes.

#include <initializer_list>
#include <vector>

#include "../ops/shape_rules.hpp"
#include "boundary.hpp"
#include "reduce.hpp"
#include "reshape.hpp"

namespace fusegrad {

/// x with its axes permuted: axis d of the result is axis perm[d] of x (negative counts from the end).
template <tensor_like X>
tensor<value_type_of<X>> transpose(const X& x, const std::vector<long>& perm) {
  return ops::run_boundary<value_type_of<X>>(ops::transpose_rule{.perm = perm}, x);
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
  FG_CHECK(t.defined(), value_error,
           "fg::expand_dims: the tensor is undefined (a moved-from tensor or an unconnected gradient)");
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
  FG_CHECK(t.defined(), value_error,
           "fg::squeeze: the tensor is undefined (a moved-from tensor or an unconnected gradient)");
  const fg::shape& s = t.shape();
  std::vector<bool> drop(s.rank(), false);
  for (std::size_t d = 0; d < s.rank(); ++d) drop[d] = ax.all && s[d] == 1;
  if (!ax.all)
    for (long a : ax.list) {
      const std::size_t d = core::normalize_axis(a, s.rank(), "squeeze");
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
  return ops::run_boundary<value_type_of<X>>(ops::broadcast_to_rule{.target = s}, x);
}

/// The tensors joined along `axis`; all have one rank and equal dimensions except along axis.
template <class T>
tensor<T> concat(const std::vector<tensor<T>>& xs, long axis = 0) {
  FG_CHECK(!xs.empty(), value_error, "fg::concat: needs at least one tensor, got an empty list");
  return ops::run_boundary<T>(ops::concat_rule{.axis = axis}, xs);
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
    dispatch::check_same_device("stack", xs[0].device(), x.device());
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
  return ops::run_boundary<value_type_of<X>>(ops::tile_rule{.multiples = multiples}, x);
}
}  // namespace fusegrad
