#pragma once
/// \file The host evaluator: one fused loop per expression, SIMD (xsimd) where every operand
/// is of one floating type, scalar otherwise. Note [host loop shapes]: when every leaf either
/// walks with the output or is a single element, the output is one flat row; otherwise the
/// loop runs row by row over the last dimension, with per-row base pointers per leaf. Leaves
/// broadcast along the row read from a splat buffer, so the inner loop has no branch.

#include <algorithm>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "../core/config.hpp"
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

/// Walks expression e over shape `out` row by row, calling f(kernel, start, length, idx) for
/// each row: `start` is the row's flat offset in `out`, idx the multi-index of its first
/// element. With allow_flat, a flat expression is one row covering all of `out`.
template <class E, class F>
void for_each_row(const E& e, const fg::shape& out, bool allow_flat, F&& f) {
  const std::size_t n = out.elements();
  if (n == 0) return;
  auto k = expr::make_kernel(e, out);
  const std::size_t rank = out.rank();
  std::array<index_t, max_rank> idx{};
  if (rank == 0 || (allow_flat && is_flat(k, rank))) {
    // One element reads data[0] through ptr as made; only longer rows need the splat buffers.
    if (n > 1) expr::for_each_leaf_kernel(k, [](auto& l) { detail::point_leaf(l, l.data, l.step == 0); });
    f(k, std::size_t{0}, n, idx);
    return;
  }
  const std::size_t inner = out.back();
  const std::size_t rows = n / inner;
  for (std::size_t r = 0; r < rows; ++r) {
    expr::for_each_leaf_kernel(k, [&](auto& l) {
      index_t off = 0;
      for (std::size_t d = 0; d + 1 < rank; ++d) off += idx[d] * l.strides[d];
      detail::point_leaf(l, l.data + off, l.strides[rank - 1] == 0);
    });
    f(k, r * inner, inner, idx);
    for (std::size_t d = rank - 1; d-- > 0;) {
      if (static_cast<std::size_t>(++idx[d]) < out[d]) break;
      idx[d] = 0;
    }
  }
}

/// Evaluates expression e, broadcast to shape `out`, into dst in one fused pass.
template <class E, class T = typename E::value_type>
void evaluate_host(const E& e, const fg::shape& out, T* dst) {
  ++fg::core::counters().passes;
  constexpr bool simd = detail::use_simd<E>();
  for_each_row(e, out, true, [&](const auto& k, std::size_t start, std::size_t n, const auto&) {
    if (n == 1) dst[start] = k.eval(expr::flat_access{0});
    else detail::run_row<simd>(k, n, dst + start);
  });
}
}  // namespace fusegrad::host
