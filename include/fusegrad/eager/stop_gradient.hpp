#pragma once
/// \file fg::stop_gradient: the same values, invisible to every tape.

#include "../ops/common.hpp"
#include "evaluate.hpp"

namespace fusegrad {
/// The values of x under a new identity that no tape tracks, so no gradient flows through it.
template <tensor_like X>
tensor<value_type_of<X>> stop_gradient(const X& x) {
  tensor<value_type_of<X>> t = eval(x);
  return tensor<value_type_of<X>>(t.buffer(), t.shape(), core::next_id());
}
}  // namespace fusegrad
