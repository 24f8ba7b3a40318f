#pragma once
/// \file The device pools (Note [device pools]): device_eval::run_pool, one kernel of fusegrad's
/// own for every pass, on CUDA and on a host Thrust system alike. Included by eval/pool.hpp when
/// FUSEGRAD_DEVICE is defined.
///
/// Note [device pools]: each output element is computed by one thread from what it reads: a
/// forward pass or max_pool2d_grad_grad from its window; a gradient (of the input's shape) by
/// gathering over the windows that cover its pixel, in the order the host's scatter adds them,
/// with a max pool's window maximum found again as the host finds it (the first in row-major
/// order, Note [max pool ties]). So the device gives the host's bits, needs no atomics, and
/// runs, and is tested, on Thrust's OpenMP system. cuDNN's pooling is not used: it pads both
/// sides of a dimension alike (TensorFlow's SAME puts the odd row after), and documents no
/// tie rule for its maximum's gradient; it has no MaxPoolGradGrad either.

#include <algorithm>
#include <cstddef>

#include "../core/config.hpp"
#include "../ops/pool_rules.hpp"
#include "device_launch.hpp"

namespace fusegrad::device_eval {
/// One element of a pool's result (Note [device pools]): of the output for the forward pass and
/// grad_grad, of the input for the gradient.
template <class T>
struct pool_element {
  const T* x;
  const T* g;
  index_t n, h, w, c, oh, ow, kh, kw, sh, sw, pt, pl;
  bool is_max;
  ops::pool_pass pass;

  /// The rows [h0, h1) and columns [w0, w1) of the input that window (oy, ox) covers.
  FG_HD void window(index_t oy, index_t ox, index_t& h0, index_t& h1, index_t& w0, index_t& w1) const {
    const index_t hs = oy * sh - pt, ws = ox * sw - pl;
    h0 = hs > 0 ? hs : 0;
    h1 = hs + kh < h ? hs + kh : h;
    w0 = ws > 0 ? ws : 0;
    w1 = ws + kw < w ? ws + kw : w;
  }
  /// The flat input index of the first maximum of channel ch in window (oy, ox) of image b.
  FG_HD index_t argmax(index_t b, index_t oy, index_t ox, index_t ch) const {
    index_t h0, h1, w0, w1;
    window(oy, ox, h0, h1, w0, w1);
    index_t at = ((b * h + h0) * w + w0) * c + ch;
    T best = x[at];
    for (index_t y = h0; y < h1; ++y)
      for (index_t q = w0; q < w1; ++q) {
        const index_t i = ((b * h + y) * w + q) * c + ch;
        if (x[i] > best) {
          best = x[i];
          at = i;
        }
      }
    return at;
  }
  FG_HD T operator()(index_t e) const {
    const index_t ch = e % c;
    if (pass == ops::pool_pass::backward) {  // e is an input element: gather over its windows
      const index_t wi = (e / c) % w, hi = (e / (c * w)) % h, b = e / (c * w * h);
      // Windows oy with oy * sh - pt <= hi < oy * sh - pt + kh, likewise for the columns.
      const index_t ly = hi + pt - kh + 1, lx = wi + pl - kw + 1;
      const index_t y0 = ly > 0 ? (ly + sh - 1) / sh : 0, x0 = lx > 0 ? (lx + sw - 1) / sw : 0;
      const index_t y1 = (hi + pt) / sh + 1 < oh ? (hi + pt) / sh + 1 : oh;
      const index_t x1 = (wi + pl) / sw + 1 < ow ? (wi + pl) / sw + 1 : ow;
      T acc = 0;
      for (index_t oy = y0; oy < y1; ++oy)
        for (index_t ox = x0; ox < x1; ++ox) {
          const T gy = g[((b * oh + oy) * ow + ox) * c + ch];
          if (!is_max) {
            index_t h0, h1, w0, w1;
            window(oy, ox, h0, h1, w0, w1);
            acc += gy / static_cast<T>((h1 - h0) * (w1 - w0));
          } else if (argmax(b, oy, ox, ch) == e) {
            acc += gy;
          }
        }
      return acc;
    }
    // e is an output element
    const index_t ox = (e / c) % ow, oy = (e / (c * ow)) % oh, b = e / (c * ow * oh);
    if (pass == ops::pool_pass::grad_grad) return g[argmax(b, oy, ox, ch)];
    index_t h0, h1, w0, w1;
    window(oy, ox, h0, h1, w0, w1);
    T acc = is_max ? x[((b * h + h0) * w + w0) * c + ch] : T(0);
    for (index_t y = h0; y < h1; ++y)
      for (index_t q = w0; q < w1; ++q) {
        const T v = x[((b * h + y) * w + q) * c + ch];
        if (is_max) acc = v > acc ? v : acc;
        else acc += v;
      }
    return is_max ? acc : acc / static_cast<T>((h1 - h0) * (w1 - w0));
  }
};

/// Writes the `outputs` elements of the pool f into out.
template <class T>
void launch_pool(const pool_element<T>& f, std::size_t outputs, fg::device d, T* out);

/// Runs the pool r on device d (Note [device pools]).
template <class T>
void run_pool(const ops::pool_request& r, const T* x, const T* g, T* out, fg::device d) {
  const ops::pool_geometry& G = r.g;
  auto i = [](auto v) { return static_cast<index_t>(v); };
  const pool_element<T> f{x,         g,         i(G.n),  i(G.h),  i(G.w),  i(G.c),
                          i(G.oh),   i(G.ow),   i(G.kh), i(G.kw), i(G.sh), i(G.sw),
                          i(G.pt),   i(G.pl),   r.kind == ops::pool_kind::max, r.pass};
  const std::size_t outputs = r.pass == ops::pool_pass::backward ? G.input().elements() : G.output().elements();
  launch_pool(f, outputs, d, out);
}
}  // namespace fusegrad::device_eval

#if !defined(FUSEGRAD_SEPARATE_KERNELS)
#include <thrust/iterator/counting_iterator.h>
#include <thrust/transform.h>

#include "device_kernels.hpp"

namespace fusegrad::device_eval {
template <class T>
void launch_pool(const pool_element<T>& f, std::size_t outputs, fg::device d, T* out) {
  device_guard guard(d);
  const thrust::counting_iterator<index_t> first(0);
  checked("a pool", d, [&] { thrust::transform(launch_policy(), first, first + static_cast<index_t>(outputs), out, f); });
}
}  // namespace fusegrad::device_eval
#endif
