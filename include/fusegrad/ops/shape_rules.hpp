#pragma once
/// \file (Used with <fusegrad/eager/boundary.hpp>, which runs these rules.) The rules of the
/// ops that rearrange elements (Note [boundary ops]): transpose, broadcast_to, tile, concat, and
/// the strided gather/scatter pair that slicing and concat's gradient share (Note [strided walks]).

#include <algorithm>
#include <array>
#include <span>
#include <string>
#include <vector>

#include "boundary.hpp"
#include "strided_walk.hpp"

namespace fusegrad {
namespace ops {
/// "[1, 0, 2]": a list of integers for error messages.
inline std::string list_str(std::span<const long> v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}
}  // namespace ops

namespace ops {
/// Axis d of the result is axis perm[d] of the operand (negative counts from the end).
struct transpose_rule {
  static constexpr const char* name = "transpose";
  std::vector<long> perm{};
  ops::strided_walk w{};
  std::vector<long> inverse{};
  bool identity = true;

  fg::shape shape(const fg::shape& s) {
    const std::size_t r = s.rank();
    FG_CHECK(perm.size() == r, shape_error, "fg::transpose: perm ", ops::list_str(perm), " has ", perm.size(),
             " entries but the tensor has shape ", s, " (rank ", r, "); give one entry per axis");
    std::vector<std::size_t> p(r);
    std::vector<bool> seen(r, false);
    for (std::size_t d = 0; d < r; ++d) {
      p[d] = core::normalize_axis(perm[d], r, "transpose");
      FG_CHECK(!seen[p[d]], shape_error, "fg::transpose: perm ", ops::list_str(perm), " names axis ", p[d],
               " twice; it must be a permutation of 0 .. ", r - 1);
      seen[p[d]] = true;
      identity = identity && p[d] == d;
    }
    const auto st = core::contiguous_strides(s);
    fg::shape out;
    inverse.assign(r, 0);
    for (std::size_t d = 0; d < r; ++d) {
      w.push(s[p[d]], st[p[d]]);
      out.push_back(s[p[d]]);
      inverse[p[d]] = static_cast<long>(d);
    }
    return out;
  }
  bool forwards_operand() const { return identity; }  // same buffer, new identity, recorded
  template <class T>
  void host(T* out, const tensor<T>& x) const { ops::copy_walk(w, x.data(), out); }
  template <class T>
  std::array<tensor<T>, 1> backward(const tensor<T>& g, std::span<const bool>) const { return {transpose(g, inverse)}; }
};

/// The operand broadcast to `target` by numpy's rules; the gradient sums over the broadcast axes.
struct broadcast_to_rule {
  static constexpr const char* name = "broadcast_to";
  fg::shape target{};
  fg::shape in{};
  ops::strided_walk w{};

  fg::shape shape(const fg::shape& x) {
    const fg::shape& s = target;
    in = x;
    core::checked_elements(s, "broadcast_to");
    FG_CHECK(s.rank() >= in.rank(), shape_error, "fg::broadcast_to: cannot broadcast shape ", in, " to ", s,
             ": the target has fewer dimensions; give a target of rank >= ", in.rank());
    if (s == in) return s;
    const std::size_t off = s.rank() - in.rank();
    const auto st = core::contiguous_strides(in);
    for (std::size_t d = 0; d < s.rank(); ++d) {
      const std::size_t di = d < off ? 1 : in[d - off];
      FG_CHECK(di == s[d] || di == 1, shape_error, "fg::broadcast_to: cannot broadcast shape ", in, " to ", s,
               " (dimension ", d, " of the target: ", di, " vs ", s[d],
               "); each dimension must equal the target's or be 1");
      w.push(s[d], di == 1 ? 0 : st[d - off]);
    }
    return s;
  }
  bool forwards_operand() const { return target == in; }
  template <class T>
  void host(T* out, const tensor<T>& x) const { ops::copy_walk(w, x.data(), out); }
  template <class T>
  std::array<tensor<T>, 1> backward(const tensor<T>& g, std::span<const bool>) const {
    const std::size_t off = target.rank() - in.rank();
    std::vector<long> summed;
    for (std::size_t d = 0; d < target.rank(); ++d)
      if (d < off || (in[d - off] == 1 && target[d] != 1)) summed.push_back(static_cast<long>(d));
    tensor<T> r = reduce_sum(g, summed, true);
    return {r.shape() == in ? r : reshape(r, in)};
  }
};

/// The operand repeated multiples[d] times along each axis d; the gradient sums over the copies.
struct tile_rule {
  static constexpr const char* name = "tile";
  std::vector<long> multiples{};
  fg::shape in{};
  ops::strided_walk w{};  // axis d becomes (copy, position): strides 0 and the operand's

  fg::shape shape(const fg::shape& s) {
    in = s;
    FG_CHECK(multiples.size() == s.rank(), shape_error, "fg::tile: multiples ", ops::list_str(multiples), " has ",
             multiples.size(), " entries but the tensor has shape ", s, " (rank ", s.rank(), "); give one per axis");
    const auto st = core::contiguous_strides(s);
    fg::shape out;
    for (std::size_t d = 0; d < s.rank(); ++d) {
      FG_CHECK(multiples[d] >= 0, value_error, "fg::tile: multiple ", multiples[d], " for axis ", d,
               " is negative; multiples must be >= 0");
      const auto m = static_cast<std::size_t>(multiples[d]);
      if (m != 1) w.push(m, 0);
      w.push(s[d], st[d]);
      out.push_back(m * s[d]);  // wraps only when the check below fails
    }
    core::checked_product(w.dims, "tile", [&] {
      return core::cat("the result of tiling shape ", s, " by multiples ", ops::list_str(multiples));
    });
    return out;
  }
  template <class T>
  void host(T* out, const tensor<T>& x) const { ops::copy_walk(w, x.data(), out); }
  template <class T>
  std::array<tensor<T>, 1> backward(const tensor<T>& g, std::span<const bool>) const {
    // One axis at a time, so the split shape has rank + 1 at most.
    tensor<T> acc = g;
    for (std::size_t d = 0; d < in.rank(); ++d) {
      if (multiples[d] == 1) continue;
      fg::shape split = acc.shape();
      split[d] = in[d];
      split.insert(d, static_cast<std::size_t>(multiples[d]));
      acc = reduce_sum(reshape(acc, split), static_cast<long>(d));
    }
    return {acc};
  }
};

/// The elements of the operand that w visits, in shape `out` (slicing; concat's gradient).
/// Its gradient is slice_grad_rule over the same walk.
struct slice_rule {
  static constexpr const char* name = "slice";
  ops::strided_walk w{};
  fg::shape out{};
  fg::shape in{};

  fg::shape shape(const fg::shape& x) {
    in = x;
    return out;
  }
  template <class T>
  void host(T* dst, const tensor<T>& x) const { ops::copy_walk(w, x.data(), dst); }
  template <class T>
  std::array<tensor<T>, 1> backward(const tensor<T>& g, std::span<const bool>) const;
};

/// Zeros of shape `in` with the operand written where w points; w visits no position twice.
/// The gradient of slice_rule, with slice_rule as its own gradient.
struct slice_grad_rule {
  static constexpr const char* name = "slice_grad";
  ops::strided_walk w{};
  fg::shape in{};
  fg::shape out{};

  fg::shape shape(const fg::shape& g) {
    out = g;
    return in;
  }
  template <class T>
  void host(T* dst, const tensor<T>& g) const {
    std::fill(dst, dst + in.elements(), T(0));
    const T* src = g.data();
    ops::walk(w, [&](std::size_t k, index_t s) { dst[s] = src[k]; });
  }
  template <class T>
  std::array<tensor<T>, 1> backward(const tensor<T>& gg, std::span<const bool>) const {
    return {ops::run_boundary<T>(slice_rule{.w = w, .out = out}, gg)};
  }
};

template <class T>
std::array<tensor<T>, 1> slice_rule::backward(const tensor<T>& g, std::span<const bool>) const {
  return {ops::run_boundary<T>(slice_grad_rule{.w = w, .in = in}, g)};
}

/// The operands joined along `axis`: one rank, equal dimensions except along axis. Each
/// operand's gradient is the slice of g it came from.
struct concat_rule {
  static constexpr const char* name = "concat";
  long axis = 0;
  std::size_t a = 0, outer = 1, inner = 1;
  std::vector<std::size_t> begins{}, lens{};

  fg::shape shape(const std::vector<fg::shape>& ss) {
    const fg::shape& s0 = ss[0];
    FG_CHECK(s0.rank() > 0, shape_error,
             "fg::concat: cannot concatenate rank-0 tensors (scalars); use fg::stack to make a vector of them");
    a = core::normalize_axis(axis, s0.rank(), "concat");
    std::size_t total = 0;
    for (std::size_t i = 0; i < ss.size(); ++i) {
      const fg::shape& si = ss[i];
      FG_CHECK(si.rank() == s0.rank(), shape_error, "fg::concat: tensor ", i, " has shape ", si, " (rank ", si.rank(),
               ") but tensor 0 has shape ", s0, " (rank ", s0.rank(), "); all tensors need the same rank");
      for (std::size_t d = 0; d < s0.rank(); ++d)
        FG_CHECK(d == a || si[d] == s0[d], shape_error, "fg::concat: tensor ", i, " has shape ", si,
                 " but tensor 0 has shape ", s0, " (dimension ", d, ": ", si[d], " vs ", s0[d],
                 "); all dimensions except the concatenation axis ", a, " must match");
      begins.push_back(total);
      lens.push_back(si[a]);
      total = core::checked_sum(total, si[a], "concat",
                                  [&] { return core::cat("the result of joining tensor ", i, " of shape ", si); });
    }
    fg::shape out = s0;
    out[a] = total;
    for (std::size_t d = 0; d < a; ++d) outer *= s0[d];
    for (std::size_t d = a + 1; d < s0.rank(); ++d) inner *= s0[d];
    return out;
  }
  template <class T>
  void host(T* dst, const std::vector<tensor<T>>& xs) const {
    for (std::size_t o = 0; o < outer; ++o)
      for (std::size_t i = 0; i < xs.size(); ++i) {
        const std::size_t chunk = lens[i] * inner;
        dst = std::copy(xs[i].data() + o * chunk, xs[i].data() + (o + 1) * chunk, dst);
      }
  }
  template <class T>
  std::vector<tensor<T>> backward(const tensor<T>& g, std::span<const bool> needed) const {
    std::vector<tensor<T>> r(begins.size());
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (!needed[i]) continue;
      fg::shape si = g.shape();
      si[a] = lens[i];
      r[i] =
          ops::run_boundary<T>(slice_rule{.w = ops::axis_range_walk(g.shape(), a, begins[i], lens[i]), .out = si}, g);
    }
    return r;
  }
};
}  // namespace ops
}  // namespace fusegrad
