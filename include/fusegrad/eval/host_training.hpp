#pragma once
/// \file The host loop of the training ops (Note [training updates] in ops/training_rules.hpp):
/// one pass over a variable's elements that reads the gradient, the variable and its slots and
/// writes the variable and its slots, split across the intra-op threads.

#include <array>
#include <cstddef>
#include <tuple>

#include "../core/parallel.hpp"

namespace fusegrad::host {

/// Applies rule r to the n elements of a variable: g the gradient, w the variable and s its
/// slots (rule.slots of them) read; w_out and s_out written (they may be w and s themselves).
template <class Rule, class T, std::size_t S>
void apply_update(const Rule& r, std::size_t n, const T* g, const T* w, T* w_out, const std::array<const T*, S>& s,
                  const std::array<T*, S>& s_out) {
  static_assert(Rule::slots == S, "fusegrad: a training rule's slot count differs from the slots given");
  core::parallel_for(n, n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      T wi = w[i];
      std::array<T, S> si;
      for (std::size_t k = 0; k < S; ++k) si[k] = s[k][i];
      std::apply([&](auto&... x) { r(g[i], wi, x...); }, si);
      w_out[i] = wi;
      for (std::size_t k = 0; k < S; ++k) s_out[k][i] = si[k];
    }
  });
}
}  // namespace fusegrad::host
