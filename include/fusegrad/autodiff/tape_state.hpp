#pragma once
/// \file What evaluators need from gradient tapes: the thread's tape stack, tape entries and
/// the recording call. The public fg::gradient_tape (gradient_tape.hpp) owns a tape_state.
/// Note [tape recording]: an evaluation whose differentiable inputs a live tape tracks adds
/// ONE entry to that tape: the slots (Note [tape slots]) of those inputs and of its outputs,
/// and a type-erased backward function. Tapes that track none of the inputs record nothing and
/// pay one lookup per input. The same entry object is shared by every tape that records it.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <variant>
#include <utility>
#include <vector>

#include "../core/numerics.hpp"
#include "../core/small_vector.hpp"

#include "../core/tensor.hpp"
#include "id_table.hpp"

namespace fusegrad::autodiff {

/// A gradient flowing through the tape: none, or a float or double tensor.
using any_grad = std::variant<std::monostate, tensor<float>, tensor<double>>;

/// The non-finite values of a gradient (Note [numerics checks]); none when there is no gradient.
inline core::nonfinite find_nonfinite(const any_grad& g) {
  if (const auto* a = std::get_if<tensor<float>>(&g)) return core::find_nonfinite(*a);
  if (const auto* b = std::get_if<tensor<double>>(&g)) return core::find_nonfinite(*b);
  return {};
}
/// The shape of a gradient (the empty shape when there is none).
inline fg::shape grad_shape(const any_grad& g) {
  if (const auto* a = std::get_if<tensor<float>>(&g)) return a->shape();
  if (const auto* b = std::get_if<tensor<double>>(&g)) return b->shape();
  return {};
}

/// The gradient of a one-element host tensor held as a number while gradient() walks the tape
/// (Note [scalar entries]). Float gradients are kept rounded to float, so the walk computes
/// exactly what the tensor path would.
struct scalar_grad {
  double value = 0;
  dtype type = dtype::float32;  ///< float32 or float64
  std::uint8_t rank = 0;        ///< rank of the tensor this is the gradient of (all dimensions 1)
};

/// A gradient in the walk: none, a tensor, or a number.
using grad_value = std::variant<std::monostate, tensor<float>, tensor<double>, scalar_grad>;

/// Ids of an entry's inputs or outputs; most entries have one or two.
using id_list = core::small_vector<tensor_id, 3>;

/// Installs the backward engines (Note [installed engines], autodiff/program_entry.hpp);
/// defined by eager/engines.hpp (Note [separate engines]).
void install_entry_engines();

/// The backward step of one recorded evaluation.
struct backward_fn {
  virtual ~backward_fn() = default;
  /// Given one upstream gradient per output (monostate where none flowed), writes the gradient
  /// of each input i for which needed[i] is true into grads[i] (monostate: no gradient).
  virtual void run(std::span<const any_grad> upstream, std::span<const bool> needed, std::span<any_grad> grads) = 0;
  /// The op's name, for error messages.
  virtual const char* name() const noexcept = 0;
  /// True when run_scalar may stand in for run (Note [scalar entries]).
  virtual bool has_scalar_path() const noexcept { return false; }
  /// run() on numbers: the entry's one upstream gradient and the input gradients it writes
  /// (nullopt where none) are one-element host gradients. Called only when has_scalar_path()
  /// and no tape would record the backward step.
  virtual void run_scalar(const scalar_grad& upstream, std::span<const bool> needed,
                          std::span<std::optional<scalar_grad>> grads) {
    (void)upstream, (void)needed, (void)grads;
  }
};

/// One recorded evaluation; its input slots, then its output slots, are stored in the tape's
/// `slots` from `first` on (one flat array, so recording allocates nothing per entry for them).
struct tape_entry {
  std::shared_ptr<backward_fn> fn;  ///< reset once a non-persistent tape has run it
  std::uint32_t first;
  std::uint16_t n_in, n_out;

  tape_entry(std::shared_ptr<backward_fn>&& f, std::uint32_t at, std::uint16_t ins, std::uint16_t outs) noexcept
      : fn(std::move(f)), first(at), n_in(ins), n_out(outs) {}
};

/// Note [gradient checks]: what the gradient of a recorded entry's output must be: the shape,
/// element type and device of that output, kept per slot when the entry is recorded.
/// gradient() checks every gradient a backward step returns, at one place: against this when
/// the input is another entry's output, against the source when it is a source (a leaf the
/// walk reaches is always a source), and names the op of a step that returns a bad one, so a
/// wrong backward (a new op's, a custom one) fails there rather than in the steps after it.
/// A slot keeps 16 bytes: one-element shapes (scalar code records one per statement) as their
/// rank, others in a side array.
struct slot_meta {
  const fg::shape* shape;  ///< valid during the recording call
  dtype type;
  fg::device device;
};
template <class T>
slot_meta meta_of(const tensor<T>& t) {
  return {&t.shape(), dtype_of<T>(), t.device()};
}
/// What a tape keeps of a slot_meta.
struct kept_meta {
  static constexpr std::uint32_t ones = 0xffffffff;  ///< shape: all ones, of rank `rank`
  fg::device device;
  std::uint32_t shape = ones;  ///< index into tape_state::shapes, or ones
  dtype type = dtype::float32;
  std::uint8_t rank = 0;
  bool known = false;  ///< false for slots no recorded entry wrote
};

/// A variable a tape has seen: type-erased handle, its id and dtype.
struct watched_variable {
  std::shared_ptr<void> state;
  tensor_id id;
  dtype type;
};

/// Note [tape slots]: a tape numbers the tensors it knows (watched, or read or written by a
/// recorded entry) 0, 1, 2... in order of first sight, and its entries store these slots, not
/// ids. gradient() so keeps reachability and gradients in flat arrays indexed by slot (Note
/// [gradient store]): the id table is consulted while recording, to find an input's slot,
/// and for the target and the sources, never per entry in the backward walk. A slot is
/// tracked when its tensor is watched or written by a recorded entry; a slot read next to a
/// tracked input but never tracked itself gets no gradient.
struct tape_state {
  static constexpr std::uint32_t no_slot = slot_map::none;

  // Large and regrown in every step of a training loop: from the buffer cache.
  std::vector<tape_entry, core::host_allocator<tape_entry>> entries;
  std::vector<std::uint32_t, core::host_allocator<std::uint32_t>> slots;  ///< the entries' input and output slots
  slot_map slot_of;                                                 ///< id -> slot
  std::vector<tensor_id, core::host_allocator<tensor_id>> slot_ids;       ///< slot -> id
  std::vector<std::uint8_t, core::host_allocator<std::uint8_t>> tracked;  ///< per slot: 1 when tracked
  std::vector<kept_meta, core::host_allocator<kept_meta>> meta;           ///< per slot (Note [gradient checks])
  std::vector<fg::shape> shapes;                                    ///< the shapes kept_meta points to
  std::vector<watched_variable> variables;  ///< in order of first watch
  bool persistent = false;
  bool watch_accessed_variables = true;
  bool paused = false;
  bool used = false;
  bool warned_recorded_gradient = false;  ///< Note [recorded gradients] (gradient_tape.hpp)
  int walking = 0;                        ///< backward walks of this tape under way (reset() refuses)
  std::thread::id owner = std::this_thread::get_id();
  /// Unique among the tapes of the process: a stop_recording guard tells its tape from a later
  /// one at the same address (Note [stop_recording guard]).
  tensor_id serial = core::next_id();
  /// append(), reached through this pointer by record(): a translation unit that records
  /// evaluations but constructs no tape does not compile it (Note [installed engines]).
  void (*append_entry)(tape_state&, std::shared_ptr<backward_fn>&&, std::span<const tensor_id>, const std::uint32_t*,
                       std::span<const tensor_id>, const slot_meta*) = &append_to;

  /// The slot of id, or no_slot.
  std::uint32_t find(tensor_id id) const noexcept { return slot_of.find(id); }
  bool tracks(tensor_id id) const noexcept {
    const std::uint32_t s = find(id);
    return s != no_slot && tracked[s];
  }
  /// The slot of id, made (untracked) when the tape has not seen id.
  std::uint32_t slot_for(tensor_id id) {
    std::uint32_t& slot = slot_of.at(id);
    if (slot == no_slot) {
      const auto s = static_cast<std::uint32_t>(slot_ids.size());
      try {
        slot_ids.push_back(id);
        tracked.push_back(0);
        meta.emplace_back();
      } catch (...) {
        slot_ids.resize(s);
        tracked.resize(s);
        throw;
      }
      slot = s;
    }
    return slot;
  }
  void track(tensor_id id) { tracked[slot_for(id)] = 1; }

  /// Writes the slots of `ids` (no_slot where unseen) to out; true when one of them is tracked.
  bool find_inputs(std::span<const tensor_id> ids, std::uint32_t* out) const noexcept {
    bool hit = false;
    for (std::size_t k = 0; k < ids.size(); ++k) {
      out[k] = find(ids[k]);
      hit = hit || (out[k] != no_slot && tracked[out[k]]);
    }
    return hit;
  }
  bool tracks_any(std::span<const tensor_id> ids) const noexcept {
    return std::any_of(ids.begin(), ids.end(), [&](tensor_id id) { return tracks(id); });
  }

  std::span<const std::uint32_t> inputs(const tape_entry& e) const noexcept { return {slots.data() + e.first, e.n_in}; }
  std::span<const std::uint32_t> outputs(const tape_entry& e) const noexcept {
    return {slots.data() + e.first + e.n_in, e.n_out};
  }
  /// Adds an entry reading `in` (whose slots find_inputs gave: no_slot where unseen) and
  /// writing `out` (described by out_meta), and tracks its outputs. On failure the entries
  /// stay as they were.
  void append(std::shared_ptr<backward_fn>&& fn, std::span<const tensor_id> in, const std::uint32_t* in_slots,
              std::span<const tensor_id> out, const slot_meta* out_meta) {
    FG_CHECK(slots.size() + in.size() + out.size() <= UINT32_MAX && in.size() <= UINT16_MAX && out.size() <= UINT16_MAX,
             tape_error, "gradient_tape: too many recorded operations on one tape (", entries.size(),
             "); reset() it or use a new tape");
    const auto first = static_cast<std::uint32_t>(slots.size());
    try {
      for (std::size_t k = 0; k < in.size(); ++k) slots.push_back(in_slots[k] != no_slot ? in_slots[k] : slot_for(in[k]));
      for (tensor_id o : out) slots.push_back(slot_for(o));
      entries.emplace_back(std::move(fn), first, static_cast<std::uint16_t>(in.size()),
                           static_cast<std::uint16_t>(out.size()));
    } catch (...) {
      slots.resize(first);
      throw;
    }
    for (std::size_t k = 0; k < out.size(); ++k) {
      const std::uint32_t o = slots[first + in.size() + k];
      tracked[o] = 1;
      keep_meta(o, out_meta[k]);
    }
  }
  static void append_to(tape_state& t, std::shared_ptr<backward_fn>&& fn, std::span<const tensor_id> in,
                        const std::uint32_t* in_slots, std::span<const tensor_id> out, const slot_meta* out_meta) {
    t.append(std::move(fn), in, in_slots, out, out_meta);
  }
  /// Note [tape size hint]: a loop that makes a tape in every step records about as much each
  /// time. A new tape reserves what the last tape this thread cleared or destroyed held (up
  /// to max_hint entries), so its arrays do not regrow, copying themselves, in every step.
  static constexpr std::size_t max_hint = std::size_t{1} << 20;
  struct size_hint {
    std::size_t entries = 0, slots = 0, slot_ids = 0;
  };
  static size_hint& last_size() noexcept {
    thread_local size_hint h;
    return h;
  }
  void reserve_like_last() {
    const size_hint h = last_size();
    if (h.entries == 0 || h.entries > max_hint) return;
    entries.reserve(h.entries);
    slots.reserve(h.slots);
    slot_ids.reserve(h.slot_ids);
    tracked.reserve(h.slot_ids);
    meta.reserve(h.slot_ids);
  }
  void remember_size() noexcept {
    if (!entries.empty()) last_size() = {entries.size(), slots.size(), slot_ids.size()};
  }

  tape_state() = default;
  tape_state(const tape_state&) = delete;
  tape_state& operator=(const tape_state&) = delete;
  ~tape_state() { remember_size(); }

  /// Forgets every entry and slot (watched variables stay listed).
  void clear() noexcept {
    remember_size();
    entries.clear();
    slots.clear();
    slot_of.clear();
    slot_ids.clear();
    tracked.clear();
    meta.clear();
    shapes.clear();
  }
  void keep_meta(std::uint32_t slot, const slot_meta& m) {
    kept_meta& k = meta[slot];
    k.device = m.device;
    k.type = m.type;
    k.rank = static_cast<std::uint8_t>(m.shape->rank());
    k.known = true;
    if (m.shape->elements() == 1) {
      k.shape = kept_meta::ones;
    } else {
      k.shape = static_cast<std::uint32_t>(shapes.size());
      shapes.push_back(*m.shape);
    }
  }
  /// The shape slot s's gradient must have (when meta[s].known).
  fg::shape kept_shape(std::uint32_t s) const {
    const kept_meta& k = meta[s];
    return k.shape == kept_meta::ones ? core::ones_shape(k.rank) : shapes[k.shape];
  }
  void watch_variable(std::shared_ptr<void> state, tensor_id id, dtype t) {
    track(id);
    for (const auto& v : variables)
      if (v.id == id) return;
    variables.push_back({std::move(state), id, t});
  }
};

/// Note [tape stack]: the live tapes of a thread, innermost last, are an array that only that
/// thread reads and writes, without a lock: recording walks it for every op. A gradient_tape
/// destroyed on another thread than the one that made it must not touch that array, nor free
/// a state the array still points to. So each thread's tapes share a tape_stack_link with it
/// (a mutex, the states orphaned so far, and whether the thread still runs): a tape destroyed
/// elsewhere hands its state to the link and raises the creator's `orphans` flag; the creator
/// sees the flag the next time it reads its stack (one relaxed atomic load per read), drops
/// the orphaned states from its array and frees them. If the creator has exited, the state is
/// freed where the tape is destroyed. The creator's ops never record on a tape that is gone.
struct thread_tapes;
/// A state handed over by a tape destroyed elsewhere; its deleter comes from that tape, so code
/// that only records does not compile tape_state's destructor.
using orphan_state = std::unique_ptr<tape_state, void (*)(tape_state*) noexcept>;
struct tape_stack_link {
  std::mutex m;
  thread_tapes* owner = nullptr;        ///< null once the thread has exited
  std::vector<orphan_state> orphaned;  ///< states of tapes destroyed elsewhere
};
/// One thread's tape stack and its link (made with the thread's first tape).
struct thread_tapes {
  std::vector<tape_state*> tapes;
  std::atomic<bool> orphans{false};  ///< link->orphaned holds states to drop; set under link->m
  std::shared_ptr<tape_stack_link> link;

  /// Drops the orphaned states from `tapes` and frees them (on this thread, their creator).
  [[gnu::cold, gnu::noinline]] void drop_orphans() noexcept {
    std::vector<orphan_state> gone;
    {
      const std::lock_guard<std::mutex> g(link->m);
      gone.swap(link->orphaned);
      orphans.store(false, std::memory_order_relaxed);
    }
    for (const auto& s : gone) tapes.erase(std::remove(tapes.begin(), tapes.end(), s.get()), tapes.end());
  }
  thread_tapes() = default;
  thread_tapes(const thread_tapes&) = delete;
  thread_tapes& operator=(const thread_tapes&) = delete;
  ~thread_tapes() {
    if (!link) return;
    std::vector<orphan_state> gone;
    const std::lock_guard<std::mutex> g(link->m);
    link->owner = nullptr;  // tapes of this thread destroyed later free their own state
    gone.swap(link->orphaned);
  }
};
inline thread_tapes& this_thread_tapes() {
  thread_local thread_tapes t;
  return t;
}

/// The live tapes of this thread, innermost last (Note [tape stack]).
inline std::vector<tape_state*>& tape_stack() {
  thread_tapes& t = this_thread_tapes();
  if (t.orphans.load(std::memory_order_relaxed)) [[unlikely]]
    t.drop_orphans();
  return t.tapes;
}

/// Pushes a new tape's state on this thread's stack; returns the link its destructor uses.
inline std::shared_ptr<tape_stack_link> push_tape(tape_state* s) {
  thread_tapes& t = this_thread_tapes();
  if (!t.link) {
    t.link = std::make_shared<tape_stack_link>();
    t.link->owner = &t;
  }
  tape_stack().push_back(s);
  return t.link;
}

/// Takes a destroyed tape's state off its creator's stack (Note [tape stack]): at once on the
/// creator's thread; from another thread, by handing the state to the creator, which frees it
/// the next time it reads its stack. `s` is left empty when the state was handed over.
inline void pop_tape(std::unique_ptr<tape_state>& s, const std::shared_ptr<tape_stack_link>& link) noexcept {
  if (link == this_thread_tapes().link) {
    auto& st = tape_stack();
    st.erase(std::remove(st.begin(), st.end(), s.get()), st.end());
    return;
  }
  const std::lock_guard<std::mutex> g(link->m);
  if (!link->owner) return;  // the creator has exited: the caller frees the state
  try {
    link->orphaned.reserve(link->orphaned.size() + 1);
  } catch (...) {
    (void)s.release();  // no memory to hand it over: keep it alive rather than leave a dangling pointer
    return;
  }
  link->orphaned.push_back(orphan_state(s.release(), [](tape_state* p) noexcept { delete p; }));
  link->owner->orphans.store(true, std::memory_order_relaxed);
}

/// Note [stop_recording guard]: a stop_recording() guard restores its tape's pause when it
/// ends, unless the tape has been destroyed first: then the guard finds no live tape of this
/// thread at its address with its serial, and does nothing (a safe no-op rather than a write
/// to freed memory; a new tape at the same address has another serial).
inline bool is_live_tape(const tape_state* s, tensor_id serial) noexcept {
  for (const tape_state* t : tape_stack())
    if (t == s) return t->serial == serial;
  return false;
}

/// True when some tape on this thread records now (the cheap test evaluators make first); a
/// tape consuming itself in gradient() is paused, so its backward pass records nothing.
inline bool recording() noexcept {
  for (const tape_state* t : tape_stack())
    if (!t->paused) return true;
  return false;
}

/// While alive, no tape on this thread records (a diagnosis that replays ops, Note [numerics
/// checks]); each tape's own pause is restored afterwards.
class all_tapes_paused {
 public:
  all_tapes_paused() {
    for (tape_state* t : tape_stack()) was_.emplace_back(t, std::exchange(t->paused, true));
  }
  ~all_tapes_paused() {
    for (auto& [t, was] : was_) t->paused = was;
  }
  all_tapes_paused(const all_tapes_paused&) = delete;
  all_tapes_paused& operator=(const all_tapes_paused&) = delete;

 private:
  std::vector<std::pair<tape_state*, bool>> was_;
};

/// True when some recording tape on this thread tracks one of `ids`.
inline bool any_tape_tracks(std::span<const tensor_id> ids) noexcept {
  for (const tape_state* t : tape_stack())
    if (!t->paused && t->tracks_any(ids)) return true;
  return false;
}

/// Records one entry on every active tape that tracks one of `inputs`. `make(context)` builds
/// the backward function, at most once, only when some tape records. `out_meta`: per output, its
/// shape, element type and device (Note [gradient checks]). Compiled once: record() below
/// hands it each caller's maker, so that every op does not compile its own copy of the loop.
inline void record_made(std::span<const tensor_id> inputs, std::span<const tensor_id> outputs,
                        const slot_meta* out_meta, std::shared_ptr<backward_fn> (*make)(const void* context),
                        const void* context) {
  std::size_t active = 0;
  for (const tape_state* t : tape_stack()) active += !t->paused;
  if (active == 0) return;
  constexpr std::size_t inline_inputs = 8;
  std::uint32_t inline_slots[inline_inputs];
  std::unique_ptr<std::uint32_t[]> heap_slots;
  std::uint32_t* in_slots = inline_slots;
  if (inputs.size() > inline_inputs) {
    heap_slots.reset(new std::uint32_t[inputs.size()]);
    in_slots = heap_slots.get();
  }
  std::shared_ptr<backward_fn> fn;
  for (tape_state* t : tape_stack()) {
    if (t->paused || !t->find_inputs(inputs, in_slots)) continue;
    if (!fn) fn = make(context);
    // The only recording tape takes fn by move (no reference count to touch).
    if (active == 1) t->append_entry(*t, std::move(fn), inputs, in_slots, outputs, out_meta);
    else t->append_entry(*t, std::shared_ptr<backward_fn>(fn), inputs, in_slots, outputs, out_meta);
  }
}
/// record_made with `make()` building the backward function.
template <class Make>
void record(std::span<const tensor_id> inputs, std::span<const tensor_id> outputs, const slot_meta* out_meta,
            Make&& make) {
  using M = std::remove_reference_t<Make>;
  record_made(
      inputs, outputs, out_meta,
      [](const void* m) -> std::shared_ptr<backward_fn> { return (*const_cast<M*>(static_cast<const M*>(m)))(); },
      static_cast<const void*>(std::addressof(make)));
}

/// Note [entry arena]: scalar entries (Note [scalar entries]) are small, hold no tensors and
/// have nothing to destroy, and scalar code records one per statement. They are placed one
/// after another in 1 MiB blocks of a thread's arena instead of being allocated one by one;
/// each entry's shared_ptr shares the ownership of its block, which goes back to the buffer
/// cache (Note [buffer cache]) when the last entry in it is gone. The thread holds its current
/// block until it needs a new one. An entry is written where the next one goes
/// (arena_reserve) while its inputs are being looked up, and the room is taken (arena_commit)
/// only when a tape records it: one pass over the evaluation's leaves, no copy.
inline constexpr std::size_t entry_block_bytes = std::size_t{1} << 20;

struct entry_arena {
  std::shared_ptr<std::byte> block;
  std::size_t used = 0;
};

/// This thread's arena, shared by every entry type.
inline entry_arena& thread_entry_arena() {
  thread_local entry_arena a;
  return a;
}

/// `bytes` rounded up to the arena's alignment: what an entry takes of its block.
constexpr std::size_t arena_size(std::size_t bytes) noexcept {
  constexpr std::size_t align = alignof(std::max_align_t);
  return (bytes + align - 1) / align * align;
}
/// Room for `bytes` bytes (an entry's few hundred) at the end of this thread's entry arena, for
/// an entry that has nothing to destroy. The room is the caller's to write but not yet taken:
/// arena_commit takes it, else the next reservation hands it out again (an entry is written
/// before it is known whether a tape records it).
inline void* arena_reserve(std::size_t bytes) {
  const std::size_t size = arena_size(bytes);
  entry_arena& a = thread_entry_arena();
  if (!a.block || a.used + size > entry_block_bytes) {
    a.block = std::shared_ptr<std::byte>(static_cast<std::byte*>(core::host_allocate(entry_block_bytes)),
                                         [](std::byte* p) { core::host_release(p, entry_block_bytes); });
    a.used = 0;
  }
  return a.block.get() + a.used;
}
/// Takes the room the last arena_reserve(bytes) gave; `owner` shares the ownership of its block.
inline void arena_commit(std::size_t bytes, std::shared_ptr<std::byte>& owner) {
  entry_arena& a = thread_entry_arena();
  a.used += arena_size(bytes);
  owner = a.block;
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
}  // namespace fusegrad::autodiff
