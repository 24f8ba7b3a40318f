#pragma once
/// \file Scans along an axis: fg::cumsum and fg::cumprod, with TensorFlow's exclusive and
/// reverse options. Their rules are in ops/scan_rules.hpp, run through ops::run_boundary
/// (Note [boundary ops]): a host kernel, so a device operand is copied to the host and the
/// result back (docs/device.md).

#include "../ops/scan_rules.hpp"
#include "boundary.hpp"

namespace fusegrad {
/// Running sums along axis (tf.math.cumsum): exclusive starts each from 0 without the element
/// itself, reverse sums from the end.
template <tensor_like X>
tensor<value_type_of<X>> cumsum(const X& x, long axis = 0, bool exclusive = false, bool reverse = false) {
  static_assert(!std::same_as<value_type_of<X>, bool>, "fusegrad: cumsum and cumprod need a numeric tensor; fg::cast<int32_t>(x) first");
  return ops::run_boundary<value_type_of<X>>(ops::cumsum_rule(axis, exclusive, reverse), x);
}

/// Running products along axis (tf.math.cumprod), with cumsum's exclusive and reverse options.
template <tensor_like X>
tensor<value_type_of<X>> cumprod(const X& x, long axis = 0, bool exclusive = false, bool reverse = false) {
  static_assert(!std::same_as<value_type_of<X>, bool>, "fusegrad: cumsum and cumprod need a numeric tensor; fg::cast<int32_t>(x) first");
  return ops::run_boundary<value_type_of<X>>(ops::cumprod_rule(axis, exclusive, reverse), x);
}
}  // namespace fusegrad
