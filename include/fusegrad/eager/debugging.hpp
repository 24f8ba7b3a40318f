#pragma once
/// \file fg::debugging (tf.debugging): check_numerics for one tensor, and
/// enable_check_numerics for every result the program makes (Note [numerics checks],
/// eager/evaluate.hpp).

#include <string>

#include "epilogue.hpp"
#include "../core/numerics.hpp"
#include "evaluate.hpp"

namespace fusegrad::debugging {

/// x itself when it holds no NaN and no infinity, else a value_error "message : Tensor had NaN
/// values" (or "Inf", or "Inf and NaN"), as tf.debugging.check_numerics. Differentiable: its
/// gradient is the upstream gradient, itself checked, with TensorFlow's message.
template <tensor_like X>
tensor<value_type_of<X>> check_numerics(const X& x, const std::string& message) {
  using T = value_type_of<X>;
  static_assert(std::is_floating_point_v<T>, "fg::debugging::check_numerics: needs a float or double tensor");
  const tensor<T> t = eval(x);
  FG_CHECK(t.defined(), value_error, "fg::debugging::check_numerics: the tensor is undefined");
  if (const core::nonfinite f = core::find_nonfinite(t))
    throw value_error(core::cat(message, " : Tensor had ", f.words(), " values"));
  tensor<T> y(t.buffer(), t.shape(), core::next_id());
  eager::epilogue("check_numerics", y, {t.shape()}, {t.id()}, [message](const tensor<T>& g, auto) {
    return std::array{check_numerics(g, "Not a number (NaN) or infinity (Inf) values detected in gradient. " + message)};
  });
  return y;
}

/// From now on, every floating-point result made on any thread (fused evaluations, reductions,
/// boundary ops, and gradients) is checked for NaN and infinities, and the first op that made one
/// is named in a value_error with its operands' shapes, as tf.debugging.enable_check_numerics.
/// Off by default; when off, a check costs one relaxed load per evaluation.
inline void enable_check_numerics() {
  autodiff::install_entry_engines();  // the replay that finds the op (Note [installed engines])
  core::numerics_checks.store(true, std::memory_order_relaxed);
}
/// Turns enable_check_numerics off (tf.debugging.disable_check_numerics).
inline void disable_check_numerics() { core::numerics_checks.store(false, std::memory_order_relaxed); }
}  // namespace fusegrad::debugging
