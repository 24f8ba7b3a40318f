#pragma once
/// \file (Used with <fusegrad/eager/boundary.hpp>, which runs these rules, and
/// <fusegrad/eval/conv.hpp>, which defines ops::run_conv.) The rules of fg::conv2d and of its two
/// gradients, conv2d_backprop_input and conv2d_backprop_filter (Note [boundary ops]): shape rules
/// with TensorFlow's semantics (NHWC data, HWIO filters), the convolution each asks an evaluator
/// to run (conv_request), and backwards written with one another, so that a gradient of any order
/// is again one of these three ops.

#include <array>
#include <cstddef>
#include <span>

#include "boundary.hpp"
#include "window.hpp"

namespace fusegrad::ops {
/// The parameters of a 2-D convolution, as tf.nn.conv2d takes them.
struct conv_params {
  size2d strides{1}, dilations{1};
  padding_spec padding{"VALID"};
};

/// A convolution's geometry: NHWC input (n, h, w, c), HWIO filters (kh, kw, c, o), NHWC output
/// (n, oh, ow, o); strides, dilations, and the pads top, bottom, left, right.
struct conv_geometry {
  std::size_t n = 0, h = 0, w = 0, c = 0, o = 0, kh = 0, kw = 0, oh = 0, ow = 0;
  long sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pb = 0, pl = 0, pr = 0;
  fg::shape input() const { return {n, h, w, c}; }
  fg::shape filter() const { return {kh, kw, c, o}; }
  fg::shape output() const { return {n, oh, ow, o}; }
};

/// Which of the three convolutions a request asks for, and what its two operands are.
enum class conv_pass {
  forward,          ///< y (n, oh, ow, o) from x and f
  backward_data,    ///< dx (n, h, w, c) from f and dy
  backward_filter,  ///< df (kh, kw, c, o) from x and dy
};

/// A convolution an evaluator runs (dispatched by ops::run_conv, eval/conv.hpp), as
/// gemm_request is matmul's.
struct conv_request {
  conv_pass pass = conv_pass::forward;
  conv_geometry g{};
};

/// Runs r on operands a and b (in conv_pass's order) into out, all on device d. Defined in
/// eval/conv.hpp, which the public header includes.
template <class T>
void run_conv(const conv_request& r, const T* a, const T* b, T* out, fg::device d);

/// How an op's error messages name the convolution's input and filters.
struct conv_names {
  const char* op = "conv2d";
  const char* input = "input";
  const char* filters = "HWIO (height, width, in_channels, out_channels)";
};

/// The geometry of a convolution of an input of shape x with filters of shape f; shape_error or
/// value_error naming the op, both shapes and the fix when they do not fit.
inline conv_geometry plan_conv(const conv_names& nm, const fg::shape& x, const fg::shape& f, const conv_params& p) {
  check_window_params(nm.op, p.padding, p.strides, p.dilations);
  FG_CHECK(x.rank() == 4, shape_error, "fg::", nm.op, ": ", nm.input,
           " must be 4-D NHWC (batch, height, width, channels), got shape ", x);
  FG_CHECK(f.rank() == 4, shape_error, "fg::", nm.op, ": filters must be 4-D ", nm.filters, ", got shape ", f);
  FG_CHECK(f[2] == x[3], shape_error, "fg::", nm.op, ": the ", nm.input, " has ", x[3], " channels (shape ", x,
           ") but the filters take ", f[2], " (shape ", f, ", ", nm.filters,
           "); the filters' third axis must equal the ", nm.input, "'s last");
  FG_CHECK(f[0] >= 1 && f[1] >= 1, shape_error, "fg::", nm.op,
           ": the filters' height and width must be >= 1, got shape ", f);
  auto what = [&] { return core::cat(nm.input, " shape ", x, ", filters shape ", f); };
  conv_geometry g;
  g.n = x[0], g.h = x[1], g.w = x[2], g.c = x[3], g.kh = f[0], g.kw = f[1], g.o = f[3];
  g.sh = p.strides.h, g.sw = p.strides.w, g.dh = p.dilations.h, g.dw = p.dilations.w;
  const window_axis ah = plan_window_axis(nm.op, "height", g.h, static_cast<long>(g.kh), g.sh, g.dh, p.padding,
                                          p.padding.top, p.padding.bottom, what);
  const window_axis aw = plan_window_axis(nm.op, "width", g.w, static_cast<long>(g.kw), g.sw, g.dw, p.padding,
                                          p.padding.left, p.padding.right, what);
  g.oh = ah.out, g.pt = ah.before, g.pb = ah.after;
  g.ow = aw.out, g.pl = aw.before, g.pr = aw.after;
  return g;
}

/// "strides {2, 2}, dilations {1, 1}, padding SAME": a convolution's parameters for messages.
inline std::string conv_params_str(const conv_params& p) {
  const char* pad = p.padding.k == padding_spec::kind::same    ? "SAME"
                    : p.padding.k == padding_spec::kind::valid ? "VALID"
                                                               : "explicit";
  return core::cat("strides {", p.strides.h, ", ", p.strides.w, "}, dilations {", p.dilations.h, ", ", p.dilations.w,
                   "}, padding ", pad);
}

/// y = conv2d(x, f): operands x (NHWC) and f (HWIO); the gradients are conv2d_backprop_input
/// and conv2d_backprop_filter.
struct conv2d_rule {
  static constexpr const char* name = "conv2d";
  conv_params p{};
  conv_geometry g{};

  fg::shape shape(const fg::shape& x, const fg::shape& f) {
    g = plan_conv({}, x, f, p);
    return g.output();
  }
  /// On the operands' device: the host's kernel, or the device's (Note [convolution on a device]).
  template <class T>
  void host(T* y, const tensor<T>& x, const tensor<T>& f) const {
    run_conv<T>({conv_pass::forward, g}, x.data(), f.data(), y, x.device());
  }
  template <class T>
  void device(T* y, const tensor<T>& x, const tensor<T>& f) const {
    host(y, x, f);
  }
  template <class T>
  std::array<tensor<T>, 2> saved(const tensor<T>&, const tensor<T>& x, const tensor<T>& f) const {
    return {x, f};
  }
  template <class T>
  std::array<tensor<T>, 2> backward(const tensor<T>& dy, std::span<const bool> need,
                                    const std::array<tensor<T>, 2>& xf) const;
};

/// dx = conv2d_backprop_input(input_shape, f, dy): operands f and dy, the gradient of a conv2d
/// of an input of shape input_shape with respect to that input; also conv2d_transpose.
struct conv2d_backprop_input_rule {
  static constexpr const char* name = "conv2d_backprop_input";
  conv_params p{};
  fg::shape input_shape{};
  bool transposed = false;  ///< called as conv2d_transpose: messages use its names
  conv_geometry g{};

  fg::shape shape(const fg::shape& f, const fg::shape& dy) {
    const conv_names nm =
        transposed ? conv_names{"conv2d_transpose", "output_shape", "HWOI (height, width, out_channels, in_channels)"}
                   : conv_names{name, "input_shape"};
    g = plan_conv(nm, input_shape, f, p);
    if (transposed)
      FG_CHECK(dy == g.output(), shape_error, "fg::conv2d_transpose: the input has shape ", dy, " but output_shape ",
               input_shape, " with filters of shape ", f, " (", conv_params_str(p), ") needs an input of shape ",
               g.output(), " (what conv2d maps output_shape to); fix output_shape or the input");
    else
      FG_CHECK(dy == g.output(), shape_error, "fg::conv2d_backprop_input: out_backprop has shape ", dy,
               " but a conv2d of input_shape ", input_shape, " with filters of shape ", f, " (", conv_params_str(p),
               ") gives ", g.output(), "; out_backprop must have the forward conv2d's output shape");
    return input_shape;
  }
  /// On the operands' device: the host's kernel, or the device's (Note [convolution on a device]).
  template <class T>
  void host(T* dx, const tensor<T>& f, const tensor<T>& dy) const {
    run_conv<T>({conv_pass::backward_data, g}, f.data(), dy.data(), dx, f.device());
  }
  template <class T>
  void device(T* dx, const tensor<T>& f, const tensor<T>& dy) const {
    host(dx, f, dy);
  }
  template <class T>
  std::array<tensor<T>, 2> saved(const tensor<T>&, const tensor<T>& f, const tensor<T>& dy) const {
    return {f, dy};
  }
  template <class T>
  std::array<tensor<T>, 2> backward(const tensor<T>& ddx, std::span<const bool> need,
                                    const std::array<tensor<T>, 2>& fdy) const;
};

/// df = conv2d_backprop_filter(x, filter_shape, dy): operands x and dy, the gradient of a conv2d
/// of x with filters of shape filter_shape with respect to the filters.
struct conv2d_backprop_filter_rule {
  static constexpr const char* name = "conv2d_backprop_filter";
  conv_params p{};
  fg::shape filter_shape{};
  conv_geometry g{};

  fg::shape shape(const fg::shape& x, const fg::shape& dy) {
    g = plan_conv({name}, x, filter_shape, p);
    FG_CHECK(dy == g.output(), shape_error, "fg::conv2d_backprop_filter: out_backprop has shape ", dy,
             " but a conv2d of an input of shape ", x, " with filter_shape ", filter_shape, " (", conv_params_str(p),
             ") gives ", g.output(), "; out_backprop must have the forward conv2d's output shape");
    return filter_shape;
  }
  /// On the operands' device: the host's kernel, or the device's (Note [convolution on a device]).
  template <class T>
  void host(T* df, const tensor<T>& x, const tensor<T>& dy) const {
    run_conv<T>({conv_pass::backward_filter, g}, x.data(), dy.data(), df, x.device());
  }
  template <class T>
  void device(T* df, const tensor<T>& x, const tensor<T>& dy) const {
    host(df, x, dy);
  }
  template <class T>
  std::array<tensor<T>, 2> saved(const tensor<T>&, const tensor<T>& x, const tensor<T>& dy) const {
    return {x, dy};
  }
  template <class T>
  std::array<tensor<T>, 2> backward(const tensor<T>& ddf, std::span<const bool> need,
                                    const std::array<tensor<T>, 2>& xdy) const;
};

// The three are bilinear and each other's adjoints: with <a, b> the sum of a * b,
// <conv2d(x, f), dy> = <x, backprop_input(f, dy)> = <f, backprop_filter(x, dy)>, so each
// gradient is one of the others (TensorFlow's Conv2D, Conv2DBackpropInput and
// Conv2DBackpropFilter gradients).
template <class T>
std::array<tensor<T>, 2> conv2d_rule::backward(const tensor<T>& dy, std::span<const bool> need,
                                               const std::array<tensor<T>, 2>& xf) const {
  std::array<tensor<T>, 2> r;
  if (need[0]) r[0] = ops::run_boundary<T>(conv2d_backprop_input_rule{p, xf[0].shape()}, xf[1], dy);
  if (need[1]) r[1] = ops::run_boundary<T>(conv2d_backprop_filter_rule{p, xf[1].shape()}, xf[0], dy);
  return r;
}

template <class T>
std::array<tensor<T>, 2> conv2d_backprop_input_rule::backward(const tensor<T>& ddx, std::span<const bool> need,
                                                              const std::array<tensor<T>, 2>& fdy) const {
  std::array<tensor<T>, 2> r;
  if (need[0]) r[0] = ops::run_boundary<T>(conv2d_backprop_filter_rule{p, fdy[0].shape()}, ddx, fdy[1]);
  if (need[1]) r[1] = ops::run_boundary<T>(conv2d_rule{p}, ddx, fdy[0]);
  return r;
}

template <class T>
std::array<tensor<T>, 2> conv2d_backprop_filter_rule::backward(const tensor<T>& ddf, std::span<const bool> need,
                                                               const std::array<tensor<T>, 2>& xdy) const {
  std::array<tensor<T>, 2> r;
  if (need[0]) r[0] = ops::run_boundary<T>(conv2d_backprop_input_rule{p, xdy[0].shape()}, ddf, xdy[1]);
  if (need[1]) r[1] = ops::run_boundary<T>(conv2d_rule{p}, xdy[0], ddf);
  return r;
}
}  // namespace fusegrad::ops
