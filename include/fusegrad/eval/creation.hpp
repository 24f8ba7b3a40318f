#pragma once
/// \file Tensors made from a shape: zeros, ones, fill, range, linspace, and their _like forms.
/// New tensors land on the default device (fg::device_scope); the _like forms on x's device.

#include <cmath>

#include "device_hooks.hpp"
#include "../core/integer.hpp"
#include "../core/tensor.hpp"

namespace fusegrad {

namespace dispatch {
/// A tensor of shape s on device d with every element equal to v; `op` names the public op in
/// a size error (Note [checked sizes]).
template <element_type T>
tensor<T> filled(const fg::shape& s, T v, fg::device d, const char* op) {
  tensor<T> t(s, d, op);
  if (d.is_gpu()) device_eval::fill(t.buffer()->data, t.size(), v, d);
  else std::fill(t.buffer()->data, t.buffer()->data + t.size(), v);
  return t;
}
}  // namespace dispatch

/// A tensor of shape s on device d with every element equal to v.
template <element_type T>
tensor<T> fill(const fg::shape& s, T v, fg::device d) { return dispatch::filled<T>(s, v, d, "fill"); }
/// A tensor of shape s with every element equal to v, on the default device (fg::device_scope).
template <element_type T>
tensor<T> fill(const fg::shape& s, T v) { return fill<T>(s, v, default_device()); }
/// Zeros of shape s.
template <element_type T = float>
tensor<T> zeros(const fg::shape& s) { return dispatch::filled<T>(s, T(0), default_device(), "zeros"); }
/// Ones of shape s.
template <element_type T = float>
tensor<T> ones(const fg::shape& s) { return dispatch::filled<T>(s, T(1), default_device(), "ones"); }
/// v in x's shape and type, on x's device.
template <class T>
tensor<T> fill_like(const tensor<T>& x, T v) { return fill<T>(x.shape(), v, x.device()); }
/// Zeros in x's shape and type, on x's device.
template <class T>
tensor<T> zeros_like(const tensor<T>& x) { return fill<T>(x.shape(), T(0), x.device()); }
/// Ones in x's shape and type, on x's device.
template <class T>
tensor<T> ones_like(const tensor<T>& x) { return fill<T>(x.shape(), T(1), x.device()); }

/// start, start + delta, ... up to but excluding limit (tf.range).
template <element_type T>
tensor<T> range(T start, T limit, T delta = T(1)) {
  FG_CHECK(delta != T(0), value_error, "fg::range: delta must not be zero");
  const double n = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) / static_cast<double>(delta));
  const std::size_t count =
      core::checked_count(n, "range", [&] { return core::cat("start ", start, ", limit ", limit, ", delta ", delta); });
  tensor<T> t(fg::shape{count}, fg::device::cpu(), "range");
  for (std::size_t i = 0; i < count; ++i) {
    if constexpr (core::signed_integer<T>)  // the last value may pass the type's end: wrap (Note [integer wraparound])
      t.buffer()->data[i] = core::wrapping_add(start, core::wrapping_mul(static_cast<T>(i), delta));
    else {
      // TensorFlow's arithmetic: the product rounded, then the sum (as linspace below).
      const volatile T offset = static_cast<T>(i) * delta;
      t.buffer()->data[i] = static_cast<T>(start + offset);
    }
  }
  return t.to(default_device());
}
/// 0, 1, ..., limit - 1.
template <element_type T>
tensor<T> range(T limit) { return range<T>(T(0), limit, T(1)); }
/// numpy's name for fg::range.
template <element_type T>
tensor<T> arange(T start, T limit, T delta = T(1)) { return range<T>(start, limit, delta); }
/// numpy's name for fg::range.
template <element_type T>
tensor<T> arange(T limit) { return range<T>(limit); }

/// num evenly spaced values from start to stop inclusive (tf.linspace).
template <element_type T = float>
tensor<T> linspace(T start, T stop, std::size_t num) {
  static_assert(std::is_floating_point_v<T>, "fg::linspace makes float or double tensors");
  tensor<T> t(fg::shape{num}, fg::device::cpu(), "linspace");
  const double step = num > 1 ? (static_cast<double>(stop) - start) / static_cast<double>(num - 1) : 0.0;
  for (std::size_t i = 0; i < num; ++i) {
    // numpy's arithmetic: the product rounded, then the sum. Fused into one multiply-add (as GCC
    // does at -O2 unless -ffp-contract=off) they give -5.6e-17 for linspace(-1, 1, 7)[3], not 0.
    const volatile double offset = step * static_cast<double>(i);
    t.buffer()->data[i] = static_cast<T>(start + offset);
  }
  if (num > 1) t.buffer()->data[num - 1] = stop;
  return t.to(default_device());
}
}  // namespace fusegrad
