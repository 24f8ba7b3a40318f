#pragma once
/// \file The host loop of the training ops (Note [training updates] in ops/training_rules.hpp):
/// one pass over a variable's elements that reads the gradient, the variable and its slots and
/// writes the variable and its slots, in SIMD batches where the build uses them (Note [host
/// simd], core/config.hpp), split across the intra-op threads.

#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>

#include "../core/config.hpp"
#include "../core/parallel.hpp"
#include "host.hpp"

#if FUSEGRAD_HOST_SIMD
#include <xsimd/xsimd.hpp>
#endif

namespace fusegrad::host {
namespace detail {
/// Rule r over elements [i, i + V's width) of the buffers, V a batch or T itself.
template <class V, class Rule, class T, std::size_t S>
inline void update_at(const Rule& r, std::size_t i, const T* g, const T* w, T* w_out,
                      const std::array<const T*, S>& s, const std::array<T*, S>& s_out) {
  auto load = [&](const T* p) {
    if constexpr (std::is_same_v<V, T>) return p[i];
    else return V::load_unaligned(p + i);
  };
  auto store = [&](const V& v, T* p) {
    if constexpr (std::is_same_v<V, T>) p[i] = v;
    else v.store_unaligned(p + i);
  };
  V wi = load(w);
  std::array<V, S> si;
  for (std::size_t k = 0; k < S; ++k) si[k] = load(s[k]);
  std::apply([&](auto&... x) { r(load(g), wi, x...); }, si);
  store(wi, w_out);
  for (std::size_t k = 0; k < S; ++k) store(si[k], s_out[k]);
}
}  // namespace detail

/// Applies rule r to the n elements of a variable: g the gradient, w the variable and s its
/// slots (rule.slots of them) read; w_out and s_out written (they may be w and s themselves).
/// The threads' ranges start at multiples of split_align, so each element is computed by the
/// same batch lane or scalar tail whatever the thread count (Note [host loop shapes]).
template <class Rule, class T, std::size_t S>
void apply_update(const Rule& r, std::size_t n, const T* g, const T* w, T* w_out, const std::array<const T*, S>& s,
                  const std::array<T*, S>& s_out) {
  static_assert(Rule::slots == S, "fusegrad: a training rule's slot count differs from the slots given");
  const std::size_t blocks = (n + split_align - 1) / split_align;
  // Weighed against Note [parallel threshold]'s x + y: each slot adds a stream read and one
  // written, and Adam's square root and division more than that, so an update of n elements
  // counts as (1 + slots) n. A 784 x 256 kernel's Adam step then splits on two threads.
  core::parallel_for(blocks, n * (1 + S), [&](std::size_t first, std::size_t last) {
    // Local copies of the rule and the pointers: read through references, the step's scalars
    // and the buffer pointers were reloaded after every store (a store through T* may alias the
    // rule's T members), and an Adam step over 2^18 floats took 1.8 times as long.
    const Rule rule = r;
    const T* const gi = g;
    const T* const wi = w;
    T* const wo = w_out;
    const std::array<const T*, S> si = s;
    const std::array<T*, S> so = s_out;
    std::size_t i = first * split_align;
    const std::size_t end = last * split_align < n ? last * split_align : n;
#if FUSEGRAD_HOST_SIMD
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      using B = xsimd::batch<T>;
      for (; i + B::size <= end; i += B::size) detail::update_at<B>(rule, i, gi, wi, wo, si, so);
    }
#endif
    for (; i < end; ++i) detail::update_at<T>(rule, i, gi, wi, wo, si, so);
  });
}
}  // namespace fusegrad::host
