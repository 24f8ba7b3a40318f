#pragma once
/// \file reshape: a new shape over the same buffer (no copy), with -1 inferring one dimension.

#include <vector>

#include "epilogue.hpp"
#include "evaluate.hpp"

namespace fusegrad {

/// The shape `dims` describes for a tensor of n elements, with at most one -1 inferred.
inline fg::shape infer_shape(std::span<const long> dims, std::size_t n, const fg::shape& from) {
  fg::shape s;
  int infer = -1;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      FG_CHECK(infer < 0, shape_error, "fg::reshape: only one dimension may be -1 (got two when reshaping ", from, ")");
      infer = static_cast<int>(i);
      s.push_back(1);
    } else {
      FG_CHECK(dims[i] >= 0, shape_error, "fg::reshape: dimension ", dims[i], " is negative (reshaping ", from, ")");
      s.push_back(static_cast<std::size_t>(dims[i]));
    }
  }
  if (infer >= 0) {
    const std::size_t known = core::checked_elements(s, "reshape");  // the -1 counts as 1 here
    FG_CHECK(known != 0 && n % known == 0, shape_error, "fg::reshape: cannot infer the -1 dimension when reshaping ",
             from, " (", n, " elements) with the other dimensions multiplying to ", known);
    s[static_cast<std::size_t>(infer)] = n / known;
  }
  return s;
}

/// The same values in shape s (s has as many elements as x). Shares x's buffer.
template <class T>
tensor<T> reshape(const tensor<T>& x, const fg::shape& s) {
  FG_CHECK(x.defined(), value_error,
           "fg::reshape: the tensor is undefined (a moved-from tensor or an unconnected gradient)");
  FG_CHECK(core::checked_elements(s, "reshape") == x.size(), shape_error,
           "fg::reshape: cannot reshape a tensor of shape ", x.shape(), " (", x.size(), " elements) into shape ", s,
           " (", s.elements(), " elements)");
  tensor<T> r(x.buffer(), s, core::next_id());
  eager::epilogue("reshape", r, {x.shape()}, {x.id()},
                  [in = x.shape()](const tensor<T>& g, auto) { return std::array{reshape(g, in)}; });
  return r;
}
/// Reshape with dimensions given as integers, one of which may be -1.
template <tensor_like X>
auto reshape(const X& x, std::initializer_list<long> dims) {
  tensor<value_type_of<X>> t = eval(x);
  return reshape(t, infer_shape(std::span<const long>(dims.begin(), dims.size()), t.size(), t.shape()));
}
/// Reshape with dimensions given as a vector of integers, one of which may be -1.
template <tensor_like X>
auto reshape(const X& x, const std::vector<long>& dims) {
  tensor<value_type_of<X>> t = eval(x);
  return reshape(t, infer_shape(dims, t.size(), t.shape()));
}
}  // namespace fusegrad
