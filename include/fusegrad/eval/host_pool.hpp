#pragma once
/// \file The definitions of the host pools that eval/pool.hpp declares: direct loops over NHWC
/// data for float and double, the innermost loop along the contiguous channels. Pooling reads
/// each input element about (window / stride)^2 times and does one comparison or addition per
/// read, so it is bound by memory, not arithmetic. Included by eval/pool.hpp in header-only
/// use; with FUSEGRAD_SEPARATE_ENGINES by the compiled library's one source file that defines
/// these functions (their linkage is FG_ENGINES_INLINE, core/config.hpp).

#include <algorithm>
#include <cstddef>
#include <vector>

#include "../core/config.hpp"
#include "../core/parallel.hpp"
#include "pool.hpp"

#if FUSEGRAD_HOST_SIMD
#include <xsimd/xsimd.hpp>
#endif

namespace fusegrad::host {
namespace pool_rows {
// The loops along a pixel's channels, in xsimd batches where the build uses them (Note [host
// simd], core/config.hpp): GCC's -O2 vectorises none of them by itself.
#if FUSEGRAD_HOST_SIMD
template <class T>
using batch = xsimd::batch<T>;
template <class T>
constexpr std::size_t width = batch<T>::size;
#else
template <class T>
constexpr std::size_t width = 0;
#endif

/// y = max(y, x), the earlier element kept on ties (as x > y ? x : y).
template <class T>
void max_into(T* y, const T* x, std::size_t n) {
  std::size_t c = 0;
#if FUSEGRAD_HOST_SIMD
  for (; c + width<T> <= n; c += width<T>) {
    const batch<T> xv = batch<T>::load_unaligned(x + c), yv = batch<T>::load_unaligned(y + c);
    xsimd::select(xv > yv, xv, yv).store_unaligned(y + c);
  }
#endif
  for (; c < n; ++c) y[c] = x[c] > y[c] ? x[c] : y[c];
}
/// y += x / d (d = 1: y += x).
template <class T>
void add_into(T* y, const T* x, std::size_t n, T d = T(1)) {
  std::size_t c = 0;
#if FUSEGRAD_HOST_SIMD
  for (; c + width<T> <= n; c += width<T>)
    (batch<T>::load_unaligned(y + c) + batch<T>::load_unaligned(x + c) / batch<T>(d)).store_unaligned(y + c);
#endif
  for (; c < n; ++c) y[c] += x[c] / d;
}
/// y /= d.
template <class T>
void divide(T* y, std::size_t n, T d) {
  std::size_t c = 0;
#if FUSEGRAD_HOST_SIMD
  for (; c + width<T> <= n; c += width<T>) (batch<T>::load_unaligned(y + c) / batch<T>(d)).store_unaligned(y + c);
#endif
  for (; c < n; ++c) y[c] /= d;
}
/// y = (at == k ? g : 0): one pixel of a max pool's gradient where windows tile the input.
template <class T>
void pick(T* y, const T* at, const T* g, T k, std::size_t n) {
  std::size_t c = 0;
#if FUSEGRAD_HOST_SIMD
  for (; c + width<T> <= n; c += width<T>)
    xsimd::select(batch<T>::load_unaligned(at + c) == batch<T>(k), batch<T>::load_unaligned(g + c), batch<T>(T(0)))
        .store_unaligned(y + c);
#endif
  for (; c < n; ++c) y[c] = at[c] == k ? g[c] : T(0);
}
/// Where x > best: best = x and at = k (the first maximum is kept).
template <class T>
void argmax_step(T* best, T* at, const T* x, T k, std::size_t n) {
  std::size_t c = 0;
#if FUSEGRAD_HOST_SIMD
  for (; c + width<T> <= n; c += width<T>) {
    const batch<T> xv = batch<T>::load_unaligned(x + c), bv = batch<T>::load_unaligned(best + c);
    const auto greater = xv > bv;
    xsimd::select(greater, xv, bv).store_unaligned(best + c);
    xsimd::select(greater, batch<T>(k), batch<T>::load_unaligned(at + c)).store_unaligned(at + c);
  }
#endif
  for (; c < n; ++c)
    if (x[c] > best[c]) {
      best[c] = x[c];
      at[c] = k;
    }
}
}  // namespace pool_rows

/// The pool r into out, reading x and g as ops::run_pool describes. Threads take contiguous
/// ranges of output rows (image, output row), or of whole images where a gradient scatters into
/// the input (windows of one image overlap only each other): every element is computed in the
/// same order on every thread count.
template <class T>
void pool_direct(const ops::pool_request& r, const T* x, const T* g, T* out) {
  const ops::pool_geometry& G = r.g;
  const std::size_t C = G.c, H = G.h, W = G.w, OH = G.oh, OW = G.ow;
  // Calls f(y_pixel, n * H, h0, h1, w0, w1) for each output pixel of the output rows [r0, r1)
  // (row n * OH + oh), with the input rows [h0, h1) and columns [w0, w1) of image n that its
  // window covers, padding left out.
  auto each_window = [&](std::size_t r0, std::size_t r1, auto&& f) {
    for (std::size_t row = r0; row < r1; ++row) {
      const std::size_t n = row / OH, oh = row % OH;
      const long hs = static_cast<long>(oh) * G.sh - G.pt;
      const std::size_t h0 = static_cast<std::size_t>(std::max(hs, 0L));
      const std::size_t h1 = static_cast<std::size_t>(std::min(hs + static_cast<long>(G.kh), static_cast<long>(H)));
      for (std::size_t ow = 0; ow < OW; ++ow) {
        const long ws = static_cast<long>(ow) * G.sw - G.pl;
        const std::size_t w0 = static_cast<std::size_t>(std::max(ws, 0L));
        const std::size_t w1 = static_cast<std::size_t>(std::min(ws + static_cast<long>(G.kw), static_cast<long>(W)));
        f(row * OW + ow, n * H, h0, h1, w0, w1);
      }
    }
  };
  // Windows that tile the input (stride = window, none past the start, every pixel covered):
  // a max pool's gradient then writes each pixel once, with no zeroing pass before.
  const bool tiles = G.sh == static_cast<long>(G.kh) && G.sw == static_cast<long>(G.kw) && G.pt == 0 && G.pl == 0 &&
                     OH * G.kh >= H && OW * G.kw >= W;
  const bool scatter = r.pass == ops::pool_pass::backward && !(r.kind == ops::pool_kind::max && tiles);
  // The work, in element visits, for Note [parallel threshold].
  const std::size_t work = G.output().elements() * G.kh * G.kw;
  // Runs body(r0, r1) over ranges of output rows split across the intra-op threads.
  auto split = [&](auto&& body) {
    if (scatter) {
      core::parallel_for(G.n, work, [&](std::size_t n0, std::size_t n1) {
        std::fill(out + n0 * H * W * C, out + n1 * H * W * C, T(0));
        body(n0 * OH, n1 * OH);
      });
    } else {
      core::parallel_for(G.n * OH, work, body);
    }
  };
  if (r.kind == ops::pool_kind::avg) {
    split([&](std::size_t r0, std::size_t r1) {
      each_window(r0, r1, [&](std::size_t yp, std::size_t nh, std::size_t h0, std::size_t h1, std::size_t w0, std::size_t w1) {
        const T count = static_cast<T>((h1 - h0) * (w1 - w0));
        if (r.pass == ops::pool_pass::forward) {
          T* y = out + yp * C;
          std::fill(y, y + C, T(0));
          for (std::size_t h = h0; h < h1; ++h)
            for (std::size_t w = w0; w < w1; ++w) pool_rows::add_into(y, x + ((nh + h) * W + w) * C, C);
          pool_rows::divide(y, C, count);
        } else {  // backward: each window's gradient spread evenly over its input elements
          for (std::size_t h = h0; h < h1; ++h)
            for (std::size_t w = w0; w < w1; ++w) pool_rows::add_into(out + ((nh + h) * W + w) * C, g + yp * C, C, count);
        }
      });
    });
    return;
  }
  if (r.pass == ops::pool_pass::forward) {
    split([&](std::size_t r0, std::size_t r1) {
      each_window(r0, r1, [&](std::size_t yp, std::size_t nh, std::size_t h0, std::size_t h1, std::size_t w0, std::size_t w1) {
        T* y = out + yp * C;
        const T* first = x + ((nh + h0) * W + w0) * C;
        std::copy(first, first + C, y);
        for (std::size_t h = h0; h < h1; ++h)
          for (std::size_t w = w0; w < w1; ++w) pool_rows::max_into(y, x + ((nh + h) * W + w) * C, C);
      });
    });
    return;
  }
  // The gradients: each window's maximum, first in row-major order (Note [max pool ties]), its
  // place kept as the tap's number k in the window (exact in T: windows are small).
  split([&](std::size_t r0, std::size_t r1) {
    std::vector<T> best(C), at(C);
    each_window(r0, r1, [&](std::size_t yp, std::size_t nh, std::size_t h0, std::size_t h1, std::size_t w0, std::size_t w1) {
      const T* first = x + ((nh + h0) * W + w0) * C;
      std::copy(first, first + C, best.begin());
      std::fill(at.begin(), at.end(), T(0));
      std::size_t k = 0;
      for (std::size_t h = h0; h < h1; ++h)
        for (std::size_t w = w0; w < w1; ++w, ++k)
          pool_rows::argmax_step(best.data(), at.data(), x + ((nh + h) * W + w) * C, static_cast<T>(k), C);
      if (!scatter && r.pass == ops::pool_pass::backward) {
        k = 0;
        for (std::size_t h = h0; h < h1; ++h)
          for (std::size_t w = w0; w < w1; ++w, ++k)
            pool_rows::pick(out + ((nh + h) * W + w) * C, at.data(), g + yp * C, static_cast<T>(k), C);
        return;
      }
      const std::size_t wide = w1 - w0;
      for (std::size_t c = 0; c < C; ++c) {
        const auto tap = static_cast<std::size_t>(at[c]);
        const std::size_t i = ((nh + h0 + tap / wide) * W + w0 + tap % wide) * C + c;
        if (r.pass == ops::pool_pass::backward)
          out[i] += g[yp * C + c];
        else
          out[yp * C + c] = g[i];
      }
    });
  });
}

FG_ENGINES_INLINE void run_pool(const ops::pool_request& r, const float* x, const float* g, float* out) {
  pool_direct(r, x, g, out);
}
FG_ENGINES_INLINE void run_pool(const ops::pool_request& r, const double* x, const double* g, double* out) {
  pool_direct(r, x, g, out);
}
}  // namespace fusegrad::host
