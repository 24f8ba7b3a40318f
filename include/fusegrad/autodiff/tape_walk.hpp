#pragma once
/// \file (Included by autodiff/gradient_tape.hpp; with FUSEGRAD_SEPARATE_ENGINES, by
/// eager/engines.hpp alone.) gradient_tape's constructor and destructor (with them the tape
/// state's growth and destruction) and its backward walk: reach, walk and collect
/// (gradient_tape::backward, reach, check_gradient). Like the engines, they are compiled in
/// every unit that makes a tape, or once per program with FUSEGRAD_SEPARATE_ENGINES (Note
/// [separate engines], eager/engines.hpp).

#include <algorithm>
#include <span>
#include <vector>

#include "gradient_tape.hpp"

namespace fusegrad {

FG_ENGINES_INLINE gradient_tape::gradient_tape(options o)
    : owned_(std::make_unique<autodiff::tape_state>()), state_(*owned_) {
  autodiff::install_entry_engines();  // Note [installed engines]
  state_.persistent = o.persistent;
  state_.watch_accessed_variables = o.watch_accessed_variables;
  state_.reserve_like_last();
  link_ = autodiff::push_tape(&state_);
}

FG_ENGINES_INLINE gradient_tape::~gradient_tape() { autodiff::pop_tape(owned_, link_); }

FG_ENGINES_INLINE void gradient_tape::reach(std::span<const std::uint32_t> src_slot, std::span<char> reached,
                                            std::span<char> useful) const {
  // Sources the tape never watched (nor computed) get no gradient, as in TensorFlow, even when
  // a recorded op read them next to a watched input.
  for (std::uint32_t s : src_slot)
    if (state_.tracked[s]) reached[s] = 1;
  for (std::size_t i = 0; i < state_.entries.size(); ++i) {
    const auto& e = state_.entries[i];
    if (!e.fn) continue;
    const auto ins = state_.inputs(e);
    if (std::any_of(ins.begin(), ins.end(), [&](std::uint32_t s) { return reached[s]; })) {
      useful[i] = 1;
      for (std::uint32_t o : state_.outputs(e)) reached[o] = 1;
    }
  }
}

FG_ENGINES_INLINE void gradient_tape::check_gradient(const autodiff::backward_fn& fn, std::size_t k, std::uint32_t s,
                                                     const autodiff::any_grad& g,
                                                     std::span<const std::uint32_t> src_slot,
                                                     const std::vector<source>& sources) const {
  const fg::shape* want = nullptr;
  dtype want_type{};
  const fg::device* want_dev = nullptr;
  fg::shape kept;
  if (const autodiff::kept_meta& m = state_.meta[s]; m.known) {
    kept = state_.kept_shape(s);
    want = &kept;
    want_type = m.type;
    want_dev = &m.device;
  } else {
    for (std::size_t q = 0; q < src_slot.size() && !want; ++q)
      if (src_slot[q] == s) {
        want = &sources[q].shape;
        want_type = sources[q].type;
      }
  }
  if (!want) return;  // a gradient nothing reads
  const bool ok = std::visit(
      [&](const auto& t) {
        using G = std::decay_t<decltype(t)>;
        if constexpr (std::is_same_v<G, std::monostate>) return true;
        else return dtype_of<typename G::value_type>() == want_type && t.shape() == *want &&
                    (!want_dev || t.device() == *want_dev);
      },
      g);
  if (ok) return;
  std::visit(
      [&](const auto& t) {
        if constexpr (!std::is_same_v<std::decay_t<decltype(t)>, std::monostate>)
          throw value_error(core::cat("gradient_tape::gradient: the backward function of '", fn.name(),
                                      "' returned for its input ", k, " a gradient of shape ", t.shape(), ", dtype ",
                                      name(t.dtype()), " on ", t.device().str(), "; that input has shape ", *want,
                                      ", dtype ", name(want_type),
                                      want_dev ? " on " + want_dev->str() : std::string()));
      },
      g);
}

FG_ENGINES_INLINE void gradient_tape::backward(tensor_id target, autodiff::grad_value seed,
                                               const std::vector<source>& sources, std::vector<result>& results) {
  const bool persistent = state_.persistent;
  const bool was_paused = state_.paused;
  // A non-persistent tape is consumed: nothing of its own backward is recorded on it.
  if (!persistent) state_.paused = true;
  struct restore {
    autodiff::tape_state& s;
    bool paused;
    bool release;
    ~restore() {
      --s.walking;
      s.paused = paused;
      if (release) s.clear();
    }
  } restore_guard{state_, was_paused, !persistent};
  ++state_.walking;  // reset() refuses while a backward function runs
  state_.used = true;

  // Slots of the sources and the target (Note [tape slots]); ones the tape has not seen get
  // untracked slots.
  std::vector<std::uint32_t> src_slot(sources.size());
  for (std::size_t s = 0; s < sources.size(); ++s) src_slot[s] = state_.slot_for(sources[s].id);
  const std::uint32_t target_slot = state_.slot_for(target);
  const std::size_t n = state_.entries.size(), n_slots = state_.slot_ids.size();

  // Reach: the entries that lead from a source to the target.
  std::vector<char, core::host_allocator<char>> reached(n_slots, 0), useful(n, 0);
  reach(src_slot, reached, useful);

  // Walk: the useful entries in reverse recording order.
  autodiff::grad_store grads(n_slots);
  grads.put(target_slot, std::move(seed));
  const auto is_source = [&](std::uint32_t slot) {
    return std::find(src_slot.begin(), src_slot.end(), slot) != src_slot.end();
  };
  // The gradient of an output that is also a source stays in the store: it is the answer.
  const auto upstream_of = [&](std::uint32_t slot) { return is_source(slot) ? grads.get(slot) : grads.take(slot); };
  // Per input of the entry being run: whether its gradient is needed.
  autodiff::scratch<bool> need;
  const auto needed_of = [&](std::span<const std::uint32_t> ins) {
    const std::span<bool> flags = need.get(ins.size());
    for (std::size_t k = 0; k < ins.size(); ++k) flags[k] = reached[ins[k]];
    return std::span<const bool>(flags);
  };
  std::vector<autodiff::any_grad> up, out;
  std::vector<std::uint32_t> slots_copy;
  autodiff::scratch<std::optional<autodiff::scalar_grad>> out_s;
  // Tapes on this thread that record the walk's steps (the same through the walk: a backward
  // function's own tapes are gone when it returns).
  const bool others_record = autodiff::recording();
  for (std::size_t i = n; i-- > 0;) {
    if (!useful[i]) continue;
    autodiff::tape_entry& entry = state_.entries[i];
    std::span<const std::uint32_t> ins = state_.inputs(entry), outs = state_.outputs(entry);
    // Numbers in, numbers out, no tensors and no variants (Note [scalar entries]); nothing
    // is recorded, so the entry stays where it is.
    if (outs.size() == 1) {
      if (grads.at(outs[0]) == autodiff::grad_store::kind::none) continue;
      autodiff::backward_fn* const fn = entry.fn.get();
      if (const std::optional<autodiff::scalar_grad> s = scalar_upstream(*fn, grads, outs[0], ins, others_record)) {
        if (!is_source(outs[0])) grads.clear(outs[0]);
        const std::span<std::optional<autodiff::scalar_grad>> in_grads = out_s.get(ins.size());
        std::fill(in_grads.begin(), in_grads.end(), std::nullopt);
        fn->run_scalar(*s, needed_of(ins), in_grads);
        for (std::size_t k = 0; k < ins.size(); ++k) {
          if (!in_grads[k]) continue;
          if (core::checking_numerics() && !std::isfinite(in_grads[k]->value)) [[unlikely]]
            check_numerics_of(*fn, k, autodiff::to_tensor_grad(autodiff::grad_value(*in_grads[k])));
          grads.add(ins[k], *in_grads[k]);
        }
        continue;
      }
    }
    // A persistent tape records its own backward pass, which may append entries and move
    // this one: copy what is needed. A consumed tape appends nothing; its entry gives up the
    // backward function, whose saved tensors go when this step is done.
    const std::shared_ptr<autodiff::backward_fn> fn = persistent ? entry.fn : std::move(entry.fn);
    if (persistent) {
      slots_copy.assign(ins.begin(), ins.end());
      slots_copy.insert(slots_copy.end(), outs.begin(), outs.end());
      ins = {slots_copy.data(), ins.size()};
      outs = {slots_copy.data() + ins.size(), outs.size()};
    }
    bool any = false;
    for (std::uint32_t o : outs) any = any || grads.at(o) != autodiff::grad_store::kind::none;
    if (!any) continue;
    up.clear();
    for (std::uint32_t o : outs) up.push_back(autodiff::to_tensor_grad(upstream_of(o)));
    const std::span<const bool> needed = needed_of(ins);
    out.assign(ins.size(), {});
    try {
      fn->run(up, needed, out);
    } catch (...) {
      autodiff::rethrow_with_prefix(core::cat("gradient_tape::gradient: the backward function of '", fn->name(),
                                              "' failed: "));
    }
    for (std::size_t k = 0; k < ins.size(); ++k) {
      if (!needed[k]) continue;
      check_gradient(*fn, k, ins[k], out[k], src_slot, sources);
      if (core::checking_numerics()) [[unlikely]]
        check_numerics_of(*fn, k, out[k]);
      grads.add(ins[k], autodiff::from_tensor_grad(std::move(out[k])));
    }
  }

  // Collect: the sources' gradients, as tensors of their shapes.
  for (std::size_t s = 0; s < sources.size(); ++s)
    if (reached[src_slot[s]] && grads.at(src_slot[s]) != autodiff::grad_store::kind::none)
      results[s].g = autodiff::to_tensor_grad(grads.get(src_slot[s]), &sources[s].shape);
}
}  // namespace fusegrad
