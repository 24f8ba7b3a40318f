#pragma once
/// \file Fused reductions on the host: the operand expression is computed a chunk at a time
/// into a small L1-resident buffer and folded at once, so the reduction is one pass over memory.
/// The reducers themselves (identity, combine) are the ops floor's (ops/reducers.hpp).

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "../core/integer.hpp"
#include "../ops/reducers.hpp"
#include "host.hpp"

namespace fusegrad::host {

namespace detail {
inline constexpr std::size_t reduce_chunk = 1024;
/// Note [parallel reductions]: a reduction is cut into blocks of about reduce_block elements,
/// fixed by the shape alone: each block folds into a partial of its own, and the partials of
/// one output combine in block order. Threads take contiguous ranges of blocks, so every
/// thread count gives the same bits. Outputs fed by one block (those that fold at most about
/// reduce_block elements) fold straight into their output, chunk after chunk, as a plain loop
/// would. The outer dimensions are walked with the kept ones outermost (row_space),
/// so the rows of one output are consecutive and a block never straddles two outputs; the
/// rows of an output still come in their row-major order. Where the last axis is kept and
/// longer than a chunk, its columns are cut instead (each piece an output range of its own),
/// which needs no partials and keeps the order of a single thread.
inline constexpr std::size_t reduce_block = 32 * reduce_chunk;
static_assert(reduce_chunk % split_align == 0, "a reduction's segments must start at split_align");

// nvcc's GPU pass never runs host loops (Note [device pass]): it folds without SIMD, since
// the reducers' combine is `__host__ __device__` and nvcc rejects batches in device code.
#if defined(__CUDA_ARCH__)
inline constexpr bool simd_folds = false;
#else
inline constexpr bool simd_folds = FUSEGRAD_HOST_SIMD;
#endif

/// Folds n values of a chunk with R, in SIMD for floating types.
template <class R, class T>
T fold_chunk(const T* v, std::size_t n) {
  std::size_t i = 0;
  T r = R::identity();
  if constexpr (simd_folds && std::is_floating_point_v<T>) {  // Note [host simd]
    using B = xsimd::batch<T>;
    constexpr std::size_t w = B::size;
    if (n >= 2 * w) {
      B a0(R::identity()), a1(R::identity());
      for (; i + 2 * w <= n; i += 2 * w) {
        a0 = R::combine(a0, B::load_unaligned(v + i));
        a1 = R::combine(a1, B::load_unaligned(v + i + w));
      }
      r = R::horizontal(R::combine(a0, a1));
    }
  }
  for (; i < n; ++i) r = R::combine(r, v[i]);
  return r;
}

/// The n values of kernel k's row segment, a chunk at a time into tmp: f(chunk offset, values, count).
template <bool Simd, class K, class T, class F>
void chunks_of(const K& k, std::size_t n, T* tmp, F&& f) {
  for (std::size_t c = 0; c < n; c += reduce_chunk) {
    const std::size_t m = std::min(reduce_chunk, n - c);
    run_row<Simd>(advanced(k, c), m, tmp);
    f(c, static_cast<const T*>(tmp), m);
  }
}
}  // namespace detail

/// Reduces expression e, broadcast to shape `iter`, into `dst` of shape `keep` (same rank as
/// iter, 1 on the reduced dimensions). dst must hold R::identity() on entry. Split across the
/// intra-op threads in fixed blocks (Note [parallel reductions]).
template <class R, class E, class T = typename E::value_type, class A = typename R::acc>
void reduce_host(const E& e, const fg::shape& iter, const fg::shape& keep, A* dst) {
  ++fg::core::counters().passes;
  const std::size_t n = iter.elements();
  if (n == 0) return;
  constexpr bool simd = detail::use_simd<E>();
  auto k = expr::make_kernel(e, iter);
  const std::size_t rank = iter.rank();
  const bool full = keep.elements() == 1;
  const bool last_reduced = rank == 0 || keep[rank - 1] == 1;
  row_space sp(iter, full && is_flat(k, rank), last_reduced ? detail::reduce_block : detail::reduce_chunk);
  std::size_t q = 0, groups = 1;
  for (std::size_t d = 0; d < sp.outer; ++d)
    if (keep[d] != 1) sp.dims[q++] = d, groups *= keep[d];
  for (std::size_t d = 0; d < sp.outer; ++d)
    if (keep[d] == 1) sp.dims[q++] = d;
  if (sp.flat && sp.segs == 1) {  // one block: the common small full reduction
    alignas(64) T tmp[detail::reduce_chunk];
    row_cursor<decltype(k)> cursor(k, sp);
    A acc = R::identity();
    detail::chunks_of<simd>(k, n, tmp, [&](std::size_t, const T* v, std::size_t c) {
      acc = R::combine(acc, static_cast<A>(detail::fold_chunk<R>(v, c)));
    });
    dst[0] = R::combine(dst[0], acc);
    return;
  }
  const std::size_t width = last_reduced ? 1 : sp.inner;  // output elements per group
  const std::size_t rows_per_group = sp.rows / groups;

  if (sp.segs > 1 && !last_reduced) {
    // Long kept rows: each piece is a group's rows over one segment of columns.
    core::parallel_for(groups * sp.segs, n, [&](std::size_t p0, std::size_t p1) {
      alignas(64) T tmp[detail::reduce_chunk];
      auto kr = k;
      row_cursor<decltype(kr)> cursor(kr, sp);
      for (std::size_t p = p0; p < p1; ++p) {
        const std::size_t g = p / sp.segs, begin = (p % sp.segs) * sp.seg, m = std::min(sp.seg, sp.inner - begin);
        A* out = dst + g * width + begin;
        cursor.seek(g * rows_per_group);
        for (std::size_t r = 0; r < rows_per_group; ++r) {
          if (r > 0) cursor.next();
          detail::chunks_of<simd>(advanced(kr, begin), m, tmp, [&](std::size_t, const T* v, std::size_t c) {
            for (std::size_t j = 0; j < c; ++j) out[j] = R::combine(out[j], static_cast<A>(v[j]));
          });
        }
      }
    });
    return;
  }

  // Blocks of units (a unit: one segment of a row): a segment of reduce_block elements, or as
  // many whole rows as make up reduce_block elements, within one group.
  const std::size_t per_group = rows_per_group * sp.segs;
  const std::size_t per_block = sp.segs > 1 ? 1 : std::max<std::size_t>(1, detail::reduce_block / sp.inner);
  const std::size_t blocks_per_group = (per_group + per_block - 1) / per_block;
  const std::size_t blocks = groups * blocks_per_group;
  // With one block per group, blocks fold straight into their output; else into partials.
  std::unique_ptr<A[]> partial;
  if (blocks_per_group > 1) {
    partial.reset(new A[blocks * width]);
    std::fill(partial.get(), partial.get() + blocks * width, R::identity());
  }
  auto first_unit = [&](std::size_t b) {
    return blocks_per_group == 1 ? b * per_group : b / blocks_per_group * per_group + b % blocks_per_group * per_block;
  };
  auto target = [&](std::size_t b) { return partial ? partial.get() + b * width : dst + b / blocks_per_group * width; };
  auto fold_blocks = [&](auto& kt, std::size_t b0, std::size_t b1) {
    alignas(64) T tmp[detail::reduce_chunk];
    std::size_t b = b0, end = first_unit(b0 + 1);
    A* out = target(b);
    A acc = R::identity();
    walk_units(kt, sp, first_unit(b0), first_unit(b1), [&](const auto& kr, std::size_t u, std::size_t, std::size_t, std::size_t m) {
      if (u == end) {  // the next block
        if (last_reduced) *out = R::combine(*out, std::exchange(acc, R::identity()));
        end = first_unit(++b + 1);
        out = target(b);
      }
      if (last_reduced) {
        detail::chunks_of<simd>(kr, m, tmp, [&](std::size_t, const T* v, std::size_t c) {
          acc = R::combine(acc, static_cast<A>(detail::fold_chunk<R>(v, c)));
        });
      } else {
        detail::chunks_of<simd>(kr, m, tmp, [&](std::size_t c0, const T* v, std::size_t c) {
          for (std::size_t j = 0; j < c; ++j) out[c0 + j] = R::combine(out[c0 + j], static_cast<A>(v[j]));
        });
      }
    });
    if (last_reduced) *out = R::combine(*out, acc);
  };
  core::parallel_for(blocks, n, [&](std::size_t b0, std::size_t b1) {
    if (b0 == 0 && b1 == blocks) return fold_blocks(k, b0, b1);
    auto own = k;  // each thread moves the leaves of its own kernel
    fold_blocks(own, b0, b1);
  });
  if (partial)
    for (std::size_t g = 0; g < groups; ++g)
      for (std::size_t b = g * blocks_per_group; b < (g + 1) * blocks_per_group; ++b)
        for (std::size_t j = 0; j < width; ++j)
          dst[g * width + j] = R::combine(dst[g * width + j], partial[b * width + j]);
}
}  // namespace fusegrad::host
