#pragma once
/// \file The sliding-window geometry that conv2d and the pools share (ops/conv_rules.hpp,
/// ops/pool_rules.hpp): fg::size2d (a window, stride or dilation), fg::padding_spec ("SAME",
/// "VALID" or explicit pads) and TensorFlow's rule for one spatial axis's output size and pads.
///
/// Note [same padding]: with "SAME" an axis of `in` positions gives out = ceil(in / stride)
/// positions; the window (of effective extent eff = (size - 1) * dilation + 1) then overhangs
/// the input by total = max((out - 1) * stride + eff - in, 0) positions, of which total / 2
/// (rounded down) go before and the rest after, so an odd total puts the extra one after
/// (TensorFlow's GetWindowedOutputSize). Padded positions hold zeros for a convolution, are
/// skipped by a max pool, and are not counted by an average pool.

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>

#include "../core/error.hpp"
#include "../core/shape.hpp"

namespace fusegrad {
/// One int for both spatial axes, or a pair {height, width}: a window size, stride or dilation.
struct size2d {
  long h = 1, w = 1;
  size2d(long both) : h(both), w(both) {}  // NOLINT: implicit, as tf.nn takes an int
  size2d(long height, long width) : h(height), w(width) {}
};

/// A window's padding as tf.nn takes it: "SAME", "VALID", or explicit pads {{top, bottom}, {left, right}}.
struct padding_spec {
  enum class kind { same, valid, explicit_pads, unknown };
  kind k = kind::valid;
  long top = 0, bottom = 0, left = 0, right = 0;
  std::string text;  ///< the string given, when it names no padding (for the error)

  padding_spec(const char* s) { parse(s ? std::string(s) : std::string("(null)")); }  // NOLINT: implicit
  padding_spec(const std::string& s) { parse(s); }                                    // NOLINT: implicit
  padding_spec(std::pair<long, long> height, std::pair<long, long> width)
      : k(kind::explicit_pads), top(height.first), bottom(height.second), left(width.first), right(width.second) {}

 private:
  void parse(const std::string& s) {
    if (s == "SAME")
      k = kind::same;
    else if (s == "VALID")
      k = kind::valid;
    else {
      k = kind::unknown;
      text = s;
    }
  }
};

namespace ops {
/// One spatial axis of a window op: its output size and the pads before and after it.
struct window_axis {
  std::size_t out = 0;
  long before = 0, after = 0;
};

/// Checks a window op's parameters that do not depend on shapes: a known padding, pads >= 0,
/// strides and (for a convolution) dilations >= 1.
inline void check_window_params(const char* op, const padding_spec& p, size2d strides, size2d dilations) {
  FG_CHECK(p.k != padding_spec::kind::unknown, value_error, "fg::", op, ": unknown padding \"", p.text,
           "\"; use \"SAME\" or \"VALID\" (upper case, as tf.nn) or explicit pads {{top, bottom}, {left, right}}");
  FG_CHECK(p.top >= 0 && p.bottom >= 0 && p.left >= 0 && p.right >= 0, value_error, "fg::", op,
           ": explicit pads must be >= 0, got {{", p.top, ", ", p.bottom, "}, {", p.left, ", ", p.right, "}}");
  FG_CHECK(strides.h >= 1 && strides.w >= 1, value_error, "fg::", op, ": strides must be >= 1, got {", strides.h, ", ",
           strides.w, "}");
  FG_CHECK(dilations.h >= 1 && dilations.w >= 1, value_error, "fg::", op, ": dilations must be >= 1, got {",
           dilations.h, ", ", dilations.w, "}");
}

/// The output size and pads of one axis of `in` positions under a window of `size` taps spaced
/// `dilation` apart, moved by `stride` (Note [same padding]); shape_error when a VALID or
/// explicitly padded input is smaller than the window. `what` names the operands for the error.
template <class What>
window_axis plan_window_axis(const char* op, const char* axis, std::size_t in, long size, long stride, long dilation,
                             const padding_spec& p, long pad_before, long pad_after, What&& what) {
  const long eff = (size - 1) * dilation + 1;
  const long n = static_cast<long>(in);
  window_axis a;
  if (p.k == padding_spec::kind::same) {
    a.out = static_cast<std::size_t>((n + stride - 1) / stride);
    const long total = a.out == 0 ? 0 : std::max((static_cast<long>(a.out) - 1) * stride + eff - n, 0L);
    a.before = total / 2;
    a.after = total - a.before;
    return a;
  }
  if (p.k == padding_spec::kind::explicit_pads) {
    a.before = pad_before;
    a.after = pad_after;
  }
  const long padded = n + a.before + a.after;
  FG_CHECK(padded >= eff, shape_error, "fg::", op, ": the window's ", axis, " (", eff,
           dilation > 1 ? " after dilation" : "", ") exceeds the ", axis, " of the ",
           p.k == padding_spec::kind::valid ? "input (" : "padded input (", padded, ") with ",
           p.k == padding_spec::kind::valid ? "VALID padding" : "explicit pads", " (", what(),
           "); use \"SAME\" padding, a smaller window or a larger input");
  a.out = static_cast<std::size_t>((padded - eff) / stride + 1);
  return a;
}
}  // namespace ops
}  // namespace fusegrad
