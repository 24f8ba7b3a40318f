#pragma once
/// \file The host evaluator's direct convolution loops over NHWC data and HWIO filters, for any
/// floating type: what host::run_conv runs for double (eval/host_dnnl.hpp), where oneDNN has no
/// f64 convolution. Each output position's taps are visited in order; the innermost loop runs
/// along the filters' contiguous output channels; threads split the loop (conv_direct).

#include <algorithm>
#include <cstddef>

#include "../core/config.hpp"
#include "../core/parallel.hpp"
#include "../ops/conv_rules.hpp"

#if FUSEGRAD_HOST_SIMD
#include <xsimd/xsimd.hpp>
#endif

namespace fusegrad::host {
namespace conv_rows {
// The loops along the output channels, in xsimd batches where the build uses them (Note [host
// simd], core/config.hpp): GCC's -O2 vectorises neither by itself.

/// y += a * x over n elements.
template <class T>
void axpy(T* y, T a, const T* x, std::size_t n) {
  std::size_t i = 0;
#if FUSEGRAD_HOST_SIMD
  using B = xsimd::batch<T>;
  for (; i + B::size <= n; i += B::size)
    xsimd::fma(B(a), B::load_unaligned(x + i), B::load_unaligned(y + i)).store_unaligned(y + i);
#endif
  for (; i < n; ++i) y[i] += a * x[i];
}
/// The sum of a * b over n elements.
template <class T>
T dot(const T* a, const T* b, std::size_t n) {
  std::size_t i = 0;
  T s = 0;
#if FUSEGRAD_HOST_SIMD
  using B = xsimd::batch<T>;
  B acc(T(0));
  for (; i + B::size <= n; i += B::size) acc = xsimd::fma(B::load_unaligned(a + i), B::load_unaligned(b + i), acc);
  s = xsimd::hadd(acc);
#endif
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}
}  // namespace conv_rows

/// The convolution r over a and b (in ops::conv_pass's order) into out, by direct loops.
template <class T>
void conv_direct(const ops::conv_request& r, const T* a, const T* b, T* out) {
  const ops::conv_geometry& g = r.g;
  const std::size_t C = g.c, O = g.o, H = g.h, W = g.w, OH = g.oh, OW = g.ow, KH = g.kh, KW = g.kw;
  const long h_in = static_cast<long>(H), w_in = static_cast<long>(W);
  // Calls f(y_pixel, x_pixel, tap) for every output pixel (batch, row, column) of the images
  // [n0, n1) and every filter tap (kh, kw), kh in [kh0, kh1), that lands on an input pixel
  // rather than on padding.
  auto each_tap = [&](std::size_t n0, std::size_t n1, std::size_t kh0, std::size_t kh1, auto&& f) {
    for (std::size_t n = n0; n < n1; ++n)
      for (std::size_t oh = 0; oh < OH; ++oh)
        for (std::size_t ow = 0; ow < OW; ++ow) {
          const std::size_t y_pixel = (n * OH + oh) * OW + ow;
          for (std::size_t kh = kh0; kh < kh1; ++kh) {
            const long h = static_cast<long>(oh) * g.sh - g.pt + static_cast<long>(kh) * g.dh;
            if (h < 0 || h >= h_in) continue;
            for (std::size_t kw = 0; kw < KW; ++kw) {
              const long w = static_cast<long>(ow) * g.sw - g.pl + static_cast<long>(kw) * g.dw;
              if (w < 0 || w >= w_in) continue;
              const std::size_t x_pixel = (n * H + static_cast<std::size_t>(h)) * W + static_cast<std::size_t>(w);
              f(y_pixel, x_pixel, kh * KW + kw);
            }
          }
        }
  };
  // Threads take ranges of images where each image writes its own output (the forward pass and
  // the data backprop), and ranges of filter rows for the filter backprop, whose every element
  // then sums over the images in one order: the same bits on every thread count.
  const std::size_t work = g.output().elements() * C * KH * KW;
  switch (r.pass) {
    case ops::conv_pass::forward:  // a = x, b = f, out = y
      core::parallel_for(g.n, work, [&](std::size_t n0, std::size_t n1) {
        std::fill(out + n0 * OH * OW * O, out + n1 * OH * OW * O, T(0));
        each_tap(n0, n1, 0, KH, [&](std::size_t yp, std::size_t xp, std::size_t k) {
          T* y = out + yp * O;
          const T* x = a + xp * C;
          const T* f = b + k * C * O;
          for (std::size_t c = 0; c < C; ++c) conv_rows::axpy(y, x[c], f + c * O, O);
        });
      });
      break;
    case ops::conv_pass::backward_data:  // a = f, b = dy, out = dx
      core::parallel_for(g.n, work, [&](std::size_t n0, std::size_t n1) {
        std::fill(out + n0 * H * W * C, out + n1 * H * W * C, T(0));
        each_tap(n0, n1, 0, KH, [&](std::size_t yp, std::size_t xp, std::size_t k) {
          const T* dy = b + yp * O;
          T* dx = out + xp * C;
          const T* f = a + k * C * O;
          for (std::size_t c = 0; c < C; ++c) dx[c] += conv_rows::dot(dy, f + c * O, O);
        });
      });
      break;
    case ops::conv_pass::backward_filter:  // a = x, b = dy, out = df
      core::parallel_for(KH, work, [&](std::size_t kh0, std::size_t kh1) {
        std::fill(out + kh0 * KW * C * O, out + kh1 * KW * C * O, T(0));
        each_tap(0, g.n, kh0, kh1, [&](std::size_t yp, std::size_t xp, std::size_t k) {
          const T* dy = b + yp * O;
          const T* x = a + xp * C;
          T* df = out + k * C * O;
          for (std::size_t c = 0; c < C; ++c) conv_rows::axpy(df + c * O, x[c], dy, O);
        });
      });
      break;
  }
}
}  // namespace fusegrad::host
