#pragma once
/// \file Indexing and slicing (`x(1, fg::slice(0, 2))`), fg::gather with its scatter-add
/// gradient, and fg::one_hot. Their rules are in ops/shape_rules.hpp (slice_rule) and
/// ops/indexing_rules.hpp, run through ops::run_boundary (Note [boundary ops]).

#include <array>
#include <concepts>
#include <cstdint>
#include <optional>
#include <type_traits>

#include "../ops/indexing_rules.hpp"
#include "shape_ops.hpp"

namespace fusegrad {

/// A numpy slice `start:stop:step` of one dimension; a missing bound means the end in the step's direction.
struct slice {
  std::optional<long> start;  ///< first index; none: the end the step starts from
  std::optional<long> stop;   ///< index to stop before; none: past the far end
  long step = 1;              ///< distance between indices, negative to walk backwards; never 0

  /// The whole dimension (`:`).
  constexpr slice() = default;
  /// start .. stop (exclusive) by step; negative bounds count from the end, out-of-range bounds clamp.
  constexpr slice(long start_, long stop_, long step_ = 1) : start(start_), stop(stop_), step(step_) {}
  /// From start to the end (`start:` or `start::step`).
  static constexpr slice from(long start_, long step_ = 1) { return {start_, std::nullopt, step_}; }
  /// From the beginning up to stop, exclusive (`:stop` or `:stop:step`).
  static constexpr slice to(long stop_, long step_ = 1) { return {std::nullopt, stop_, step_}; }
  /// Every step-th element from the end the step starts at (`::step`; `every(-1)` reverses).
  static constexpr slice every(long step_) { return {std::nullopt, std::nullopt, step_}; }

 private:
  constexpr slice(std::optional<long> a, std::optional<long> b, long s) : start(a), stop(b), step(s) {}
};

/// The whole dimension, as an index: `x(fg::all(), 0)` (a call, since fg::all also names reduce_all).
constexpr slice all() noexcept { return slice{}; }

namespace eager {
/// Resolves s against a dimension of size n, as Python's slice.indices does: first index and count.
inline std::pair<long, std::size_t> resolve_slice(const slice& s, long n) {
  FG_CHECK(s.step != 0, value_error, "fg::slice: the step must not be zero");
  const bool down = s.step < 0;
  auto bound = [&](std::optional<long> b, long missing) {
    if (!b) return missing;
    long v = *b;
    if (v < 0) {
      v += n;
      if (v < 0) v = down ? -1 : 0;
    } else if (v >= n) {
      v = down ? n - 1 : n;
    }
    return v;
  };
  const long start = bound(s.start, down ? n - 1 : 0);
  const long stop = bound(s.stop, down ? -1 : n);
  // The step's magnitude in the unsigned type: -LONG_MIN does not fit in a long.
  const unsigned long mag = down ? 0UL - static_cast<unsigned long>(s.step) : static_cast<unsigned long>(s.step);
  long count = 0;
  if (down && stop < start) count = static_cast<long>(static_cast<unsigned long>(start - stop - 1) / mag + 1);
  if (!down && start < stop) count = static_cast<long>(static_cast<unsigned long>(stop - start - 1) / mag + 1);
  return {start, static_cast<std::size_t>(count)};
}

template <class I>
concept index_like = std::same_as<I, slice> || (std::integral<I> && !std::same_as<I, bool>);
}  // namespace eager

template <class T>
template <class... I>
tensor<T> tensor<T>::operator()(const I&... idx) const {
  static_assert((eager::index_like<I> && ...),
                "fg::tensor::operator(): each index must be an integer or an fg::slice "
                "(fg::slice(start, stop, step), fg::slice::from(start), fg::slice::to(stop), fg::all())");
  FG_CHECK(defined(), value_error, "fg::tensor::operator(): the tensor is undefined (an unconnected gradient?)");
  FG_CHECK(sizeof...(I) <= rank(), index_error, "fg::tensor::operator(): ", sizeof...(I),
           " indices given for a tensor of shape ", shape_, " (rank ", rank(), ")");
  const auto st = core::contiguous_strides(shape_);
  ops::strided_walk w;
  fg::shape out;
  std::size_t d = 0;
  [[maybe_unused]] auto one = [&](const auto& ix) {
    const long n = static_cast<long>(shape_[d]);
    if constexpr (std::same_as<std::remove_cvref_t<decltype(ix)>, slice>) {
      const auto [first, count] = eager::resolve_slice(ix, n);
      if (count > 0) w.offset += first * st[d];
      // With two or more elements |step| < n, so the product cannot overflow.
      w.push(count, count > 1 ? ix.step * st[d] : 0);
      out.push_back(count);
    } else {
      using J = std::remove_cvref_t<decltype(ix)>;
      // An unsigned index is never negative: a huge one is out of range, not a count from the end.
      if constexpr (std::is_unsigned_v<J>)
        FG_CHECK(ix < static_cast<std::make_unsigned_t<long>>(n), index_error, "fg::tensor::operator(): index ", ix,
                 " is out of range for dimension ", d, " of size ", n, " (shape ", shape_, ")");
      const long i = static_cast<long>(ix);
      FG_CHECK(i >= -n && i < n, index_error, "fg::tensor::operator(): index ", i, " is out of range for dimension ",
               d, " of size ", n, " (shape ", shape_, "; valid indices are ", -n, " to ", n - 1, ")");
      w.offset += (i < 0 ? i + n : i) * st[d];
    }
    ++d;
  };
  (one(idx), ...);
  for (; d < rank(); ++d) {  // trailing dimensions stay whole
    w.push(shape_[d], st[d]);
    out.push_back(shape_[d]);
  }
  return ops::run_boundary<T>(ops::slice_rule{.w = std::move(w), .out = out}, *this);
}

namespace eager {
template <class I>
concept gather_index = std::same_as<I, std::int32_t> || std::same_as<I, std::int64_t>;
}  // namespace eager

/// Slices of params along `axis` picked by integer indices of any shape (tf.gather): the result
/// has shape params.shape[:axis] + indices.shape + params.shape[axis+1:]. Indices run from 0 to
/// the dimension's size - 1 (negative ones are out of range, as in TensorFlow).
template <tensor_like P, tensor_like I>
tensor<value_type_of<P>> gather(const P& params, const I& indices, long axis = 0) {
  using T = value_type_of<P>;
  using Ix = value_type_of<I>;
  static_assert(eager::gather_index<Ix>, "fg::gather: indices must be a tensor<int32_t> or tensor<int64_t>");
  return ops::run_boundary<T>(ops::gather_rule(axis), params, indices);
}

/// A one-hot encoding of integer indices (tf.one_hot): shape indices.shape + (depth,), `on` at
/// each index and `off` elsewhere; an index outside 0 .. depth - 1 gives a row of `off`.
template <element_type T = float, tensor_like I>
tensor<T> one_hot(const I& indices, long depth, std::type_identity_t<T> on = T(1), std::type_identity_t<T> off = T(0)) {
  using Ix = value_type_of<I>;
  static_assert(eager::gather_index<Ix>, "fg::one_hot: indices must be a tensor<int32_t> or tensor<int64_t>");
  return ops::run_boundary<T>(ops::one_hot_rule<T>{.depth = depth, .on = on, .off = off}, indices);
}
}  // namespace fusegrad
