#pragma once
/// \file (Used with <fusegrad/eager/boundary.hpp>, which runs these rules, and
/// <fusegrad/eval/pool.hpp>, which defines ops::run_pool.) The rules of the 2-D pools (Note
/// [boundary ops]) with TensorFlow's semantics on NHWC data: max_pool2d, its gradient
/// max_pool2d_grad (TensorFlow's MaxPoolGrad) and that gradient's gradient
/// max_pool2d_grad_grad (MaxPoolGradGrad), each other's adjoints; avg_pool2d and its gradient
/// avg_pool2d_grad (AvgPoolGrad), likewise. So a gradient of any order is again one of them.
///
/// Note [max pool ties]: where a window's maximum occurs more than once, its gradient goes to
/// the first occurrence in row-major order (top row first, then left to right), as TensorFlow's
/// CPU kernels do (checked against TensorFlow 2.21 in tests/pooling_test.cpp). The maximum's
/// position is found again from the pool's input by each of the gradient ops, so no index
/// tensor is kept between them; no gradient flows to that input (TensorFlow gives zeros).

#include <array>
#include <cstddef>
#include <span>

#include "boundary.hpp"
#include "window.hpp"

namespace fusegrad::ops {
/// The parameters of a 2-D pool, as tf.nn.max_pool2d takes them.
struct pool_params {
  size2d ksize{1}, strides{1};
  padding_spec padding{"VALID"};
};

/// A pool's geometry: NHWC input (n, h, w, c), window (kh, kw), NHWC output (n, oh, ow, c);
/// strides and the pads top, bottom, left, right.
struct pool_geometry {
  std::size_t n = 0, h = 0, w = 0, c = 0, kh = 1, kw = 1, oh = 0, ow = 0;
  long sh = 1, sw = 1, pt = 0, pb = 0, pl = 0, pr = 0;
  fg::shape input() const { return {n, h, w, c}; }
  fg::shape output() const { return {n, oh, ow, c}; }
};

enum class pool_kind { max, avg };
/// Which pass a pool request asks for, and what it reads and writes.
enum class pool_pass {
  forward,    ///< y (output shape) from x
  backward,   ///< dx (input shape) from dy, and for a max pool x (Note [max pool ties])
  grad_grad,  ///< a max pool only: ddy (output shape) from x and ddx, ddx read at each window's maximum
};

/// A pool an evaluator runs (dispatched by ops::run_pool, eval/pool.hpp).
struct pool_request {
  pool_kind kind = pool_kind::max;
  pool_pass pass = pool_pass::forward;
  pool_geometry g{};
};

/// Runs r into out on device d, reading x (the pool's input; null where r does not read it) and
/// g (the incoming gradient, of the output's shape for `backward` and the input's for
/// `grad_grad`; null for `forward`). Defined in eval/pool.hpp, which the public header includes.
template <class T>
void run_pool(const pool_request& r, const T* x, const T* g, T* out, fg::device d);

/// The geometry of pool `op` over an input of shape x; shape_error or value_error naming the op,
/// the shape and the fix when they do not fit.
inline pool_geometry plan_pool(const char* op, pool_kind kind, const fg::shape& x, const pool_params& p) {
  check_window_params(op, p.padding, p.strides, size2d{1});
  FG_CHECK(p.ksize.h >= 1 && p.ksize.w >= 1, value_error, "fg::", op, ": ksize must be >= 1, got {", p.ksize.h, ", ",
           p.ksize.w, "}");
  FG_CHECK(
      p.ksize.h * p.ksize.w <= (1L << 24), value_error, "fg::", op, ": a window of {", p.ksize.h, ", ", p.ksize.w,
      "} has more than 2^24 elements, more than the pool kernels count exactly; use global_max_pool2d or a reduction");
  FG_CHECK(x.rank() == 4, shape_error, "fg::", op,
           ": input must be 4-D NHWC (batch, height, width, channels), got shape ", x);
  const padding_spec& pad = p.padding;
  if (pad.k == padding_spec::kind::explicit_pads) {
    FG_CHECK(kind == pool_kind::max, value_error, "fg::", op,
             ": explicit pads are for max pooling only (TensorFlow's AvgPool takes \"SAME\" or \"VALID\")");
    FG_CHECK(pad.top < p.ksize.h && pad.bottom < p.ksize.h && pad.left < p.ksize.w && pad.right < p.ksize.w,
             value_error, "fg::", op, ": explicit pads {{", pad.top, ", ", pad.bottom, "}, {", pad.left, ", ",
             pad.right, "}} must each be smaller than the window {", p.ksize.h, ", ", p.ksize.w,
             "}, so that every window holds an input element");
  }
  auto what = [&] { return core::cat("input shape ", x, ", ksize {", p.ksize.h, ", ", p.ksize.w, "}"); };
  pool_geometry g;
  g.n = x[0], g.h = x[1], g.w = x[2], g.c = x[3];
  g.kh = static_cast<std::size_t>(p.ksize.h), g.kw = static_cast<std::size_t>(p.ksize.w);
  g.sh = p.strides.h, g.sw = p.strides.w;
  const window_axis ah = plan_window_axis(op, "height", g.h, p.ksize.h, g.sh, 1, pad, pad.top, pad.bottom, what);
  const window_axis aw = plan_window_axis(op, "width", g.w, p.ksize.w, g.sw, 1, pad, pad.left, pad.right, what);
  g.oh = ah.out, g.pt = ah.before, g.pb = ah.after;
  g.ow = aw.out, g.pl = aw.before, g.pr = aw.after;
  return g;
}

/// Throws shape_error unless an incoming gradient `got` has the shape `want` the op needs.
inline void check_pool_gradient(const char* op, const char* role, const fg::shape& got, const fg::shape& want,
                                const fg::shape& x) {
  FG_CHECK(got == want, shape_error, "fg::", op, ": ", role, " has shape ", got, " but the pool of an input of shape ",
           x, " needs ", want);
}

/// y = max_pool2d(x): the maximum of each window, padding skipped.
struct max_pool2d_rule {
  static constexpr const char* name = "max_pool2d";
  pool_params p{};
  pool_geometry g{};

  fg::shape shape(const fg::shape& x) {
    g = plan_pool(name, pool_kind::max, x, p);
    return g.output();
  }
  /// On the operands' device: the host's kernel, or the device's (Note [convolution on a device]).
  template <class T>
  void host(T* y, const tensor<T>& x) const {
    run_pool<T>({pool_kind::max, pool_pass::forward, g}, x.data(), nullptr, y, x.device());
  }
  template <class T>
  void device(T* y, const tensor<T>& x) const {
    host(y, x);
  }
  template <class T>
  tensor<T> saved(const tensor<T>&, const tensor<T>& x) const {
    return x;
  }
  template <class T>
  std::array<tensor<T>, 1> backward(const tensor<T>& dy, std::span<const bool>, const tensor<T>& x) const;
};

/// dx = max_pool2d_grad(dy, x): operands dy (differentiated) and x; each window's dy added at the
/// window's maximum (Note [max pool ties]).
struct max_pool2d_grad_rule {
  static constexpr const char* name = "max_pool2d_grad";
  static constexpr std::size_t differentiable = 1;
  pool_params p{};
  pool_geometry g{};

  fg::shape shape(const fg::shape& dy, const fg::shape& x) {
    g = plan_pool(name, pool_kind::max, x, p);
    check_pool_gradient(name, "the gradient", dy, g.output(), x);
    return x;
  }
  /// On the operands' device: the host's kernel, or the device's (Note [convolution on a device]).
  template <class T>
  void host(T* dx, const tensor<T>& dy, const tensor<T>& x) const {
    run_pool<T>({pool_kind::max, pool_pass::backward, g}, x.data(), dy.data(), dx, dy.device());
  }
  template <class T>
  void device(T* dx, const tensor<T>& dy, const tensor<T>& x) const {
    host(dx, dy, x);
  }
  template <class T>
  tensor<T> saved(const tensor<T>&, const tensor<T>&, const tensor<T>& x) const {
    return x;
  }
  template <class T>
  std::array<tensor<T>, 1> backward(const tensor<T>& ddx, std::span<const bool>, const tensor<T>& x) const;
};

/// ddy = max_pool2d_grad_grad(ddx, x): operands ddx (of x's shape, differentiated) and x; each
/// window's value of ddx at the window's maximum.
struct max_pool2d_grad_grad_rule {
  static constexpr const char* name = "max_pool2d_grad_grad";
  static constexpr std::size_t differentiable = 1;
  pool_params p{};
  pool_geometry g{};

  fg::shape shape(const fg::shape& ddx, const fg::shape& x) {
    g = plan_pool(name, pool_kind::max, x, p);
    check_pool_gradient(name, "the gradient", ddx, x, x);
    return g.output();
  }
  /// On the operands' device: the host's kernel, or the device's (Note [convolution on a device]).
  template <class T>
  void host(T* ddy, const tensor<T>& ddx, const tensor<T>& x) const {
    run_pool<T>({pool_kind::max, pool_pass::grad_grad, g}, x.data(), ddx.data(), ddy, ddx.device());
  }
  template <class T>
  void device(T* ddy, const tensor<T>& ddx, const tensor<T>& x) const {
    host(ddy, ddx, x);
  }
  template <class T>
  tensor<T> saved(const tensor<T>&, const tensor<T>&, const tensor<T>& x) const {
    return x;
  }
  template <class T>
  std::array<tensor<T>, 1> backward(const tensor<T>& h, std::span<const bool>, const tensor<T>& x) const {
    return {ops::run_boundary<T>(max_pool2d_grad_rule{p}, h, x)};
  }
};

template <class T>
std::array<tensor<T>, 1> max_pool2d_rule::backward(const tensor<T>& dy, std::span<const bool>,
                                                   const tensor<T>& x) const {
  return {ops::run_boundary<T>(max_pool2d_grad_rule{p}, dy, x)};
}
template <class T>
std::array<tensor<T>, 1> max_pool2d_grad_rule::backward(const tensor<T>& ddx, std::span<const bool>,
                                                        const tensor<T>& x) const {
  return {ops::run_boundary<T>(max_pool2d_grad_grad_rule{p}, ddx, x)};
}

/// y = avg_pool2d(x): the mean of each window over its input elements (padding not counted).
struct avg_pool2d_rule {
  static constexpr const char* name = "avg_pool2d";
  pool_params p{};
  pool_geometry g{};

  fg::shape shape(const fg::shape& x) {
    g = plan_pool(name, pool_kind::avg, x, p);
    return g.output();
  }
  /// On the operands' device: the host's kernel, or the device's (Note [convolution on a device]).
  template <class T>
  void host(T* y, const tensor<T>& x) const {
    run_pool<T>({pool_kind::avg, pool_pass::forward, g}, x.data(), nullptr, y, x.device());
  }
  template <class T>
  void device(T* y, const tensor<T>& x) const {
    host(y, x);
  }
  template <class T>
  std::array<tensor<T>, 1> backward(const tensor<T>& dy, std::span<const bool>) const;
};

/// dx = avg_pool2d_grad(input_shape, dy): each window's dy spread evenly over its input elements.
struct avg_pool2d_grad_rule {
  static constexpr const char* name = "avg_pool2d_grad";
  pool_params p{};
  fg::shape input_shape{};
  pool_geometry g{};

  fg::shape shape(const fg::shape& dy) {
    g = plan_pool(name, pool_kind::avg, input_shape, p);
    check_pool_gradient(name, "the gradient", dy, g.output(), input_shape);
    return input_shape;
  }
  /// On the operands' device: the host's kernel, or the device's (Note [convolution on a device]).
  template <class T>
  void host(T* dx, const tensor<T>& dy) const {
    run_pool<T>({pool_kind::avg, pool_pass::backward, g}, nullptr, dy.data(), dx, dy.device());
  }
  template <class T>
  void device(T* dx, const tensor<T>& dy) const {
    host(dx, dy);
  }
  template <class T>
  std::array<tensor<T>, 1> backward(const tensor<T>& ddx, std::span<const bool>) const {
    return {ops::run_boundary<T>(avg_pool2d_rule{p}, ddx)};
  }
};

template <class T>
std::array<tensor<T>, 1> avg_pool2d_rule::backward(const tensor<T>& dy, std::span<const bool>) const {
  return {ops::run_boundary<T>(avg_pool2d_grad_rule{p, g.input()}, dy)};
}
}  // namespace fusegrad::ops
