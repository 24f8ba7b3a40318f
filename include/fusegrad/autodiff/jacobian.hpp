#pragma once
/// \file (Used with <fusegrad/eager/evaluate.hpp>, which evaluates expressions; the umbrella header has both.)
/// gradient_tape::jacobian and batch_jacobian: one backward pass per target element
/// (per element of one example, for batch_jacobian), seeded with a one-hot output gradient.
/// Seeds and the Jacobian are built on the host, whatever the default device, and gradients
/// are read through host copies: a device tensor's memory may not be host memory. The seeds
/// and the result go to the target's device.

#include <algorithm>

#include "gradient_tape.hpp"

namespace fusegrad {
namespace autodiff {
/// Lets a tape answer several gradient() calls for one jacobian, then restores it: a
/// non-persistent tape records nothing meanwhile and is consumed afterwards.
struct jacobian_scope {
  tape_state& s;
  bool persistent, paused;
  explicit jacobian_scope(tape_state& st) : s(st), persistent(st.persistent), paused(st.paused) {
    if (!persistent) s.paused = true;
    s.persistent = true;
  }
  jacobian_scope(const jacobian_scope&) = delete;
  ~jacobian_scope() {
    s.persistent = persistent;
    s.paused = paused;
    if (!persistent) {
      s.used = true;
      s.clear();
    }
  }
};
}  // namespace autodiff

template <class T, class R>
tensor<T> gradient_tape::jacobian_passes(const tensor<R>& y, const source& src, unconnected_gradients u,
                                         std::size_t b, const fg::shape& js, const char* op) {
  const std::size_t ye = b ? y.size() / b : 0, xe = b ? src.shape.elements() / b : 0;
  tensor<T> jac = dispatch::filled<T>(js, T(0), fg::device::cpu(), op);
  autodiff::jacobian_scope scope(state_);
  for (std::size_t j = 0; j < ye; ++j) {
    tensor<R> seed = fill<R>(y.shape(), R(0), fg::device::cpu());
    for (std::size_t e = 0; e < b; ++e) seed.buffer()->data[e * ye + j] = R(1);
    tensor<T> g = std::move(gradient_impl(y, seed.to(y.device()), {src}, u)[0]).template as<T>();
    if (!g.defined()) {
      if (u == unconnected_gradients::none) return {};
      continue;
    }
    const tensor<T> hg = dispatch::host_operand(g, op);
    for (std::size_t e = 0; e < b; ++e)
      std::copy(hg.data() + e * xe, hg.data() + (e + 1) * xe, jac.buffer()->data + (e * ye + j) * xe);
  }
  return jac.to(y.device());
}

template <class Y, class S>
tensor<value_type_of<S>> gradient_tape::jacobian(const Y& target, const S& x, unconnected_gradients u) {
  check_jacobian_call("jacobian");
  const tensor<value_type_of<Y>> y = eval(target);
  const source src = source_of(x);
  fg::shape js = y.shape();
  for (std::size_t d : src.shape) js.push_back(d);
  return jacobian_passes<value_type_of<S>>(y, src, u, 1, js, "jacobian");
}

template <class Y, class S>
tensor<value_type_of<S>> gradient_tape::batch_jacobian(const Y& target, const S& x, unconnected_gradients u) {
  check_jacobian_call("batch_jacobian");
  const tensor<value_type_of<Y>> y = eval(target);
  const source src = source_of(x);
  FG_CHECK(y.rank() >= 1 && src.shape.rank() >= 1 && y.shape()[0] == src.shape[0], shape_error,
           "gradient_tape::batch_jacobian: target ", y.shape(), " and source ", src.shape,
           " must both have the batch size as their first dimension");
  fg::shape js = y.shape();
  for (std::size_t d = 1; d < src.shape.rank(); ++d) js.push_back(src.shape[d]);
  return jacobian_passes<value_type_of<S>>(y, src, u, y.shape()[0], js, "batch_jacobian");
}
}  // namespace fusegrad
