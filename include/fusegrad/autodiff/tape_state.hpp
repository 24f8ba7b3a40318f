#pragma once
/// \file What evaluators need from gradient tapes: the thread's tape stack, tape entries and
/// the recording call. The public fg::gradient_tape (gradient_tape.hpp) owns a tape_state.
/// Note [tape recording]: an evaluation whose differentiable inputs a live tape tracks adds
/// ONE entry to that tape: the ids of those inputs, the ids of its outputs, and a type-erased
/// backward function. Tapes that track none of the inputs record nothing and pay one lookup
/// per input. The same entry object is shared by every tape that records it.

#include <algorithm>
#include <memory>
#include <span>
#include <thread>
#include <variant>
#include <vector>

#include "../core/small_vector.hpp"

#include "../core/tensor.hpp"
#include "id_table.hpp"

namespace fusegrad::detail {

/// A gradient flowing through the tape: none, or a float or double tensor.
using any_grad = std::variant<std::monostate, tensor<float>, tensor<double>>;

/// Ids of an entry's inputs or outputs; most entries have one or two.
using id_list = small_vector<tensor_id, 3>;

/// The backward step of one recorded evaluation.
struct backward_fn {
  virtual ~backward_fn() = default;
  /// Given one upstream gradient per output (monostate where none flowed), writes the gradient
  /// of each input i for which needed[i] is true into grads[i] (monostate: no gradient).
  virtual void run(std::span<const any_grad> upstream, std::span<const bool> needed, std::span<any_grad> grads) = 0;
  /// The op's name, for error messages.
  virtual const char* name() const noexcept = 0;
};

struct tape_entry {
  std::shared_ptr<backward_fn> fn;  ///< reset once a non-persistent tape has run it
  id_list inputs;
  id_list outputs;
};

/// A variable a tape has seen: type-erased handle, its id and dtype.
struct watched_variable {
  std::shared_ptr<void> state;
  tensor_id id;
  dtype type;
};

struct tape_state {
  std::vector<tape_entry> entries;
  id_set tracked;                             ///< watched ids and outputs of recorded entries
  std::vector<watched_variable> variables; ///< in order of first watch
  bool persistent = false;
  bool watch_accessed_variables = true;
  bool paused = false;
  bool used = false;
  std::thread::id owner = std::this_thread::get_id();

  bool tracks(tensor_id id) const noexcept { return tracked.contains(id); }
  void watch_variable(std::shared_ptr<void> state, tensor_id id, dtype t) {
    tracked.insert(id);
    for (const auto& v : variables)
      if (v.id == id) return;
    variables.push_back({std::move(state), id, t});
  }
};

/// The live tapes of this thread, innermost last.
inline std::vector<tape_state*>& tape_stack() {
  thread_local std::vector<tape_state*> s;
  return s;
}

/// True when some tape on this thread records now (the cheap test evaluators make first); a
/// tape consuming itself in gradient() is paused, so its backward pass records nothing.
inline bool recording() noexcept {
  for (const tape_state* t : tape_stack())
    if (!t->paused) return true;
  return false;
}

/// Records one entry on every active tape that tracks one of `inputs`. `make` builds the
/// backward function, at most once, only when some tape records.
template <class Make>
void record(std::span<const tensor_id> inputs, std::span<const tensor_id> outputs, Make&& make) {
  std::shared_ptr<backward_fn> fn;
  for (tape_state* t : tape_stack()) {
    if (t->paused) continue;
    const bool hit = std::any_of(inputs.begin(), inputs.end(), [&](tensor_id id) { return t->tracks(id); });
    if (!hit) continue;
    if (!fn) fn = make();
    t->entries.push_back({fn, id_list(inputs.begin(), inputs.end()), id_list(outputs.begin(), outputs.end())});
    for (tensor_id o : outputs) t->tracked.insert(o);
  }
}

/// Functions told of every trainable variable read on this thread (custom gradients collect
/// the variables their function reads this way).
using variable_read_fn = void (*)(const std::shared_ptr<void>&, tensor_id, dtype);
inline std::vector<variable_read_fn>& variable_read_observers() {
  thread_local std::vector<variable_read_fn> s;
  return s;
}

/// Called when an expression reads a trainable variable: tapes that watch accessed variables
/// start tracking it (TensorFlow's automatic watching).
inline void on_variable_read(const std::shared_ptr<void>& state, tensor_id id, dtype t) {
  for (tape_state* tp : tape_stack())
    if (!tp->paused && tp->watch_accessed_variables) tp->watch_variable(state, id, t);
}
}  // namespace fusegrad::detail
