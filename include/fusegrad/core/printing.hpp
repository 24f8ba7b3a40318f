#pragma once
/// \file (Used with <fusegrad/eager/evaluate.hpp>, which evaluates expressions; the umbrella header has both.)
/// operator<< for tensors and expressions, in TensorFlow's layout:
/// `tensor(<numpy body>, shape=(2, 4), dtype=int32)`, the body on its own line when it spans several.

#include <ostream>
#include <sstream>

#include "format.hpp"
#include "tensor.hpp"

namespace fusegrad {

/// The values as numpy prints them (`str(x.numpy())`): `[[ 3  4]\n [10 12]]`.
template <class T>
std::string numpy_str(const tensor<T>& t) {
  FG_CHECK(t.defined(), value_error, "fg::numpy_str: the tensor is undefined");
  const tensor<T> h = t.device().is_cpu() ? t : t.cpu();
  std::ostringstream body;
  core::format_array(body, h.data(), std::span<const std::size_t>(h.shape().begin(), h.shape().size()));
  return body.str();
}

/// Prints a tensor like TensorFlow prints a tf.Tensor.
template <class T>
std::ostream& operator<<(std::ostream& os, const tensor<T>& t) {
  if (!t.defined()) return os << "tensor(undefined)";
  const std::string b = numpy_str(t);
  os << "tensor(" << (b.find('\n') != std::string::npos ? "\n" : "") << b << ", shape=" << t.shape()
     << ", dtype=" << name(t.dtype());
  if (!t.device().is_cpu()) os << ", device=" << t.device();
  return os << ")";
}

/// Prints the value of an expression (it is evaluated first).
template <expression E>
std::ostream& operator<<(std::ostream& os, const E& e) {
  return os << tensor<typename E::value_type>(e);
}
}  // namespace fusegrad
