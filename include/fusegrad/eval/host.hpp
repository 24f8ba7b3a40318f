#pragma once
/// \file The host evaluator: one fused loop per expression, SIMD (xsimd) where every operand
/// is of one floating type, scalar otherwise. Note [host loop shapes]: when every leaf either
/// walks with the output or is a single element, the output is one flat row; otherwise the
/// loop runs row by row over the last dimension, with per-row base pointers per leaf. Leaves
/// broadcast along the row read from a splat buffer, so the inner loop has no branch. Above
/// core::parallel_threshold elements, threads take contiguous ranges of rows, or of segments of
/// long rows, cut at multiples of every SIMD width (row_space).

#include <algorithm>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "../core/config.hpp"
#include "../core/parallel.hpp"
#include "../core/storage.hpp"
#include "../expr/kernel.hpp"

namespace fusegrad::host {

/// SIMD access at flat element i of the current row.
template <class B>
struct batch_access {
  index_t i;
  const void* alias = nullptr;  ///< the buffer alias_kernel leaves read
  const void* pool = nullptr;   ///< the values of pooled literals
  const void* const* slots = nullptr;  ///< the buffers slot_kernel leaves read
  template <class T> B load(const expr::leaf_kernel<T>& k) const { return B::load_unaligned(k.ptr + i * k.step); }
  template <class T, std::size_t J> B load_slot() const { return B::load_unaligned(static_cast<const T*>(slots[J]) + i); }
  template <class T> B load_alias() const { return B::load_unaligned(static_cast<const T*>(alias) + i); }
  template <class T, std::size_t J> B pooled() const { return B(static_cast<const T*>(pool)[J]); }
  template <class T> B broadcast(T v) const { return B(v); }
};

namespace detail {
template <class E>
constexpr bool use_simd() {
  using T = typename E::value_type;
  if constexpr (!FUSEGRAD_HOST_SIMD)  // Note [host simd] (core/config.hpp)
    return false;
  else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
    return expr::uniform_type<E, T>::value && xsimd::batch<T>::size <= expr::splat_width;
  else
    return false;
}

/// Runs kernel k over n elements of the current row into dst. Note [flatten] (core/config.hpp):
/// the whole chain is inlined into this loop, xsimd's math included, so the compiler can merge
/// the repeated subexpressions a backward pass recomputes (exp(x) in several derivative terms)
/// and keep everything in registers.
/// `slots`: the buffers of slot_kernel leaves (Note [programs], expr/program.hpp).
template <bool Simd, class K, class T>
FG_FLATTEN void run_row(const K& k, std::size_t n, T* dst, const void* alias = nullptr,
                        const void* const* slots = nullptr) {
  std::size_t i = 0;
  if constexpr (Simd) {
    using B = xsimd::batch<T>;
    constexpr std::size_t w = B::size;
    for (; i + w <= n; i += w) {
      B v = k.eval(batch_access<B>{static_cast<index_t>(i), alias, nullptr, slots});
      v.store_unaligned(dst + i);
    }
  }
  for (; i < n; ++i) dst[i] = k.eval(expr::flat_access{static_cast<index_t>(i), alias, nullptr, slots});
}

/// Evaluates a tree whose leaves are slot leaves over n elements of the buffers `slots` into
/// dst: the loop behind a program op's block rules (Note [programs]).
/// Not flattened: these loops are many and small, and the math functions they call are then
/// compiled once and shared rather than inlined into each.
template <class E, class T>
void evaluate_slots(const E& e, std::size_t n, T* dst, const void* const* slots) {
  const auto k = expr::make_kernel(e, fg::shape{});
  std::size_t i = 0;
  if constexpr (use_simd<E>()) {
    using B = xsimd::batch<T>;
    constexpr std::size_t w = B::size;
    for (; i + w <= n; i += w) k.eval(batch_access<B>{static_cast<index_t>(i), nullptr, nullptr, slots}).store_unaligned(dst + i);
  }
  for (; i < n; ++i) dst[i] = k.eval(expr::flat_access{static_cast<index_t>(i), nullptr, nullptr, slots});
}

template <class T>
void point_leaf(expr::leaf_kernel<T>& l, const T* base, bool broadcast) {
  if (broadcast) {
    l.splat.fill(*base);
    l.ptr = l.splat.data();
    l.step = 0;
  } else {
    l.ptr = base;
    l.step = 1;
  }
}
}  // namespace detail

/// True when every leaf of kernel k walks with the output or is one element.
template <class K>
bool is_flat(K& k, std::size_t rank) {
  bool flat = true;
  expr::for_each_leaf_kernel(k, [&](auto& l) {
    if (l.step == 0)
      for (std::size_t d = 0; d < rank; ++d) flat = flat && l.strides[d] == 0;
  });
  return flat;
}

/// Elements the ranges of a split loop start at multiples of: a multiple of every SIMD width,
/// so that each element is computed by the same batch lane or scalar tail on every split
/// (Note [host loop shapes]), and of a cache line, so that threads do not write one line. An
/// elementwise loop may be cut at any such multiple; a reduction is cut at fixed blocks.
inline constexpr std::size_t split_align = 64;
static_assert(core::parallel_grain % split_align == 0, "evaluate_host's segments must start at split_align");

/// The loop over a shape as threads share it (Note [host loop shapes], Note [intra-op pool]): a
/// sequence of rows (one row holding every element when it is flat), each cut into segments of
/// `seg` elements (a multiple of split_align); a thread takes a contiguous range of (row,
/// segment) units. The outer dimensions are walked in the order `dims` (outermost first);
/// reductions walk the kept ones first (eval/host_reduce.hpp).
struct row_space {
  const fg::shape& shape;
  bool flat = false;
  std::size_t inner = 0, rows = 0, seg = 0, segs = 0;
  std::size_t outer = 0;  ///< the number of outer dimensions: rank - 1, 0 when flat
  std::array<std::size_t, max_rank> dims;

  /// The rows of s, a shape of at least one element.
  row_space(const fg::shape& s, bool is_flat, std::size_t seg_max) : shape(s), flat(is_flat || s.rank() == 0) {
    const std::size_t n = s.elements();
    inner = flat ? n : s.back();
    rows = flat ? 1 : n / inner;
    outer = flat ? 0 : s.rank() - 1;
    for (std::size_t d = 0; d < outer; ++d) dims[d] = d;
    seg = inner <= seg_max ? inner : seg_max;
    segs = inner <= seg_max ? 1 : (inner + seg - 1) / seg;
  }
  std::size_t units() const { return rows * segs; }
};

/// Sets the leaves of a kernel to the rows of a row_space, in its walking order.
template <class K>
class row_cursor {
 public:
  row_cursor(K& k, const row_space& sp) : k_(k), sp_(sp) {
    if (sp.flat) expr::for_each_leaf_kernel(k_, [](auto& l) { detail::point_leaf(l, l.data, l.step == 0); });
  }
  /// Points the leaves at row r (in walking order).
  void seek(std::size_t r) {
    if (sp_.flat) return;
    for (std::size_t q = sp_.outer; q-- > 0;) {
      const std::size_t d = sp_.dims[q];
      idx_[d] = static_cast<index_t>(r % sp_.shape[d]);
      r /= sp_.shape[d];
    }
    point();
  }
  /// Points the leaves at the next row.
  void next() {
    for (std::size_t q = sp_.outer; q-- > 0;) {
      const std::size_t d = sp_.dims[q];
      if (static_cast<std::size_t>(++idx_[d]) < sp_.shape[d]) break;
      idx_[d] = 0;
    }
    point();
  }

 private:
  void point() {
    const std::size_t last = sp_.shape.rank() - 1;
    expr::for_each_leaf_kernel(k_, [&](auto& l) {
      index_t off = 0;
      for (std::size_t d = 0; d < last; ++d) off += idx_[d] * l.strides[d];
      detail::point_leaf(l, l.data + off, l.strides[last] == 0);
    });
  }
  K& k_;
  const row_space& sp_;
  std::array<index_t, max_rank> idx_{};
};

/// A copy of kernel k whose leaves start `offset` elements further along the row they point at.
template <class K>
K advanced(const K& k, std::size_t offset) {
  K piece = k;
  expr::for_each_leaf_kernel(piece, [&](auto& l) { l.ptr += static_cast<index_t>(offset) * l.step; });
  return piece;
}

/// Calls f(kernel, unit, row, begin, length) for the units [u0, u1) of sp: row `row` in walking
/// order, its elements [begin, begin + length), the kernel's leaves pointing there. Moves k's
/// leaves: each thread walks its own copy.
template <class K, class F>
void walk_units(K& k, const row_space& sp, std::size_t u0, std::size_t u1, F&& f) {
  row_cursor<K> cursor(k, sp);
  std::size_t r = sp.segs == 1 ? u0 : u0 / sp.segs, s = sp.segs == 1 ? 0 : u0 % sp.segs;
  cursor.seek(r);
  for (std::size_t u = u0; u < u1; ++u, ++s) {
    if (s == sp.segs) {
      s = 0;
      ++r;
      cursor.next();
    }
    const std::size_t begin = s * sp.seg, length = std::min(sp.seg, sp.inner - begin);
    if (begin == 0) {
      f(k, u, r, begin, length);
    } else {
      const K piece = advanced(k, begin);
      f(piece, u, r, begin, length);
    }
  }
}

/// Runs f(kernel, u0, u1) over the units of sp split across the intra-op threads (`elements`
/// in all), each thread with its own copy of kernel k; on one thread, k itself.
template <class K, class F>
void split_units(K& k, const row_space& sp, std::size_t elements, F&& f) {
  core::parallel_for(sp.units(), elements, [&](std::size_t u0, std::size_t u1) {
    if (u0 == 0 && u1 == sp.units()) return f(k, u0, u1);
    K own = k;
    f(own, u0, u1);
  });
}

/// Evaluates expression e, broadcast to shape `out`, into dst in one fused pass, split across
/// the intra-op threads above core::parallel_threshold elements (Note [intra-op pool]).
template <class E, class T = typename E::value_type>
void evaluate_host(const E& e, const fg::shape& out, T* dst) {
  ++fg::core::counters().passes;
  const std::size_t n = out.elements();
  if (n == 0) return;
  auto k = expr::make_kernel(e, out);
  // One element reads data[0] through ptr as made; only longer rows need the splat buffers.
  if (n == 1) {
    dst[0] = k.eval(expr::flat_access{0});
    return;
  }
  constexpr bool simd = detail::use_simd<E>();
  if (out.rank() == 0 || is_flat(k, out.rank())) {
    // One row, cut anywhere at a multiple of split_align: as even as the thread count allows.
    expr::for_each_leaf_kernel(k, [](auto& l) { detail::point_leaf(l, l.data, l.step == 0); });
    const std::size_t units = (n + split_align - 1) / split_align;
    return core::parallel_for(units, n, [&](std::size_t u0, std::size_t u1) {
      if (u0 == 0 && u1 == units) return detail::run_row<simd>(k, n, dst);
      const std::size_t begin = u0 * split_align, end = std::min(n, u1 * split_align);
      detail::run_row<simd>(advanced(k, begin), end - begin, dst + begin);
    });
  }
  const row_space sp(out, false, core::parallel_grain);
  split_units(k, sp, n, [&](auto& kt, std::size_t u0, std::size_t u1) {
    walk_units(kt, sp, u0, u1, [&](const auto& kr, std::size_t, std::size_t r, std::size_t begin, std::size_t m) {
      T* to = dst + r * sp.inner + begin;
      if (m == 1) *to = kr.eval(expr::flat_access{0});
      else detail::run_row<simd>(kr, m, to);
    });
  });
}
}  // namespace fusegrad::host
