#pragma once
/// \file The device pass of the training ops (Note [training updates] in ops/training_rules.hpp):
/// device_eval::run_training, the counterpart of host::apply_update (eval/host_training.hpp) for
/// a variable on a GPU. One kernel over the variable's elements, on CUDA and on a host Thrust
/// system alike: element i reads the gradient, the variable and its slots at i, applies the rule
/// (its `__host__ __device__` call operator, instantiated with the element type) and writes the
/// variable's and the slots' new buffers at i. Included by eval/device_hooks.hpp when
/// FUSEGRAD_DEVICE is defined; with FUSEGRAD_SEPARATE_KERNELS only the launcher's declaration is
/// read, and the .cu file cuda/kernels.py writes defines it (Note [separate kernels]).

#include <array>
#include <cstddef>
#include <type_traits>
#include <utility>

#include "../core/config.hpp"
#include "device_launch.hpp"

namespace fusegrad::device_eval {
/// One element of a training step: a trivially copyable functor holding the rule (the step's
/// scalars) and raw device pointers, so it travels to the GPU by value (Note [device functors]).
/// The slots are read and written at constant indices only, through a pack over the slots, so
/// nothing is indexed at run time (Note [device parameters]).
template <class Rule, class T>
struct training_element {
  static constexpr std::size_t slots = static_cast<std::size_t>(Rule::slots);
  Rule rule;
  const T* g;
  const T* w;
  T* w_out;
  std::array<const T*, slots> s;
  std::array<T*, slots> s_out;

  FG_HD void operator()(index_t i) const { step(i, std::make_index_sequence<slots>{}); }

  template <std::size_t... K>
  FG_HD void step(index_t i, std::index_sequence<K...>) const {
    T wi = w[i];
    [[maybe_unused]] std::array<T, slots> si{s[K][i]...};
    rule(g[i], wi, si[K]...);
    w_out[i] = wi;
    ((s_out[K][i] = si[K]), ...);
  }
};

/// Applies the step f to the n elements of its buffers on device d: one kernel.
template <class Rule, class T>
void launch_training(const training_element<Rule, T>& f, std::size_t n, fg::device d);

/// Applies rule r to the n elements of a variable on device d, as host::apply_update does on the
/// host: g the gradient, w the variable and s its slots read; w_out and s_out (new buffers)
/// written.
template <class Rule, class T, std::size_t S>
void run_training(const Rule& r, std::size_t n, const T* g, const T* w, T* w_out, const std::array<const T*, S>& s,
                  const std::array<T*, S>& s_out, fg::device d) {
  static_assert(Rule::slots == S, "fusegrad: a training rule's slot count differs from the slots given");
  static_assert(std::is_trivially_copyable_v<training_element<Rule, T>>,
                "fusegrad: a training rule must be trivially copyable to reach the device");
  if (n == 0) return;
  launch_training(training_element<Rule, T>{r, g, w, w_out, s, s_out}, n, d);
}
}  // namespace fusegrad::device_eval

#if !defined(FUSEGRAD_SEPARATE_KERNELS)
// First: it configures Thrust before any Thrust header is read.
#include "device_kernels.hpp"

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

namespace fusegrad::device_eval {
template <class Rule, class T>
void launch_training(const training_element<Rule, T>& f, std::size_t n, fg::device d) {
  device_guard guard(d);
  const thrust::counting_iterator<index_t> first(0);
  checked("a training step", d, [&] { thrust::for_each(launch_policy(), first, first + static_cast<index_t>(n), f); });
}
}  // namespace fusegrad::device_eval
#endif
