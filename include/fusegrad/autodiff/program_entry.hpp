#pragma once
/// \file The tape entries of recorded evaluations: fused_entry for an evaluation over tensors,
/// scalar_entry for one over a single element (Note [scalar entries]). Both hold the
/// expression's program (Note [programs]) and what its leaves and literals held, no expression
/// types: their code is compiled once, not once per expression.

#include <array>
#include <atomic>
#include <optional>

#include "program_backward.hpp"

namespace fusegrad::autodiff {

struct fused_entry;
struct scalar_view;

/// A leaf of a recorded evaluation as the type-erased recording takes it (Note [type-erased
/// recording], eager/evaluate.hpp): its tensor, shape, first element, id and element type.
struct leaf_ref {
  const void* tensor;  ///< the leaf's tensor<T>, T of element type `type`
  const fg::shape* shape;
  const void* data;
  tensor_id id;
  dtype type;
};
/// Makes the fused entry of a device evaluation (Note [device backward]); null for a plain one.
using entry_maker = std::shared_ptr<fused_entry> (*)(const expr::program& p, const void* context);

/// Note [installed engines]: the backward engines (block, point and replay), the eager
/// services they call, the op-by-op runner, and the recording and numerics reports of
/// evaluations are reached through one table of function pointers, installed by the first
/// gradient_tape a program constructs (install_entry_engines(), defined by eager/engines.hpp,
/// where the services are known) and by enable_check_numerics. An evaluation then refers to
/// none of their code, only to its program: a translation unit compiles the engines only where
/// it constructs a tape, so a unit that never differentiates does not pay for them. Entries
/// run only inside gradient() and evaluations record only while a tape records, so a tape, and
/// the table, exist then.
struct entry_engines {
  /// Runs a fused entry's backward step.
  void (*fused)(fused_entry& f, std::span<const any_grad> upstream, std::span<const bool> needed,
                std::span<any_grad> grads);
  /// point_backward: a program's backward step over single elements.
  void (*point)(const expr::program& p, const core::cell* leaf_values, const core::cell* literals,
                const std::uint8_t* input_of, const dtype* input_types, core::cell g, std::span<const bool> needed,
                std::span<std::optional<core::cell>> out);
  /// A scalar entry's step replayed op by op (when a tape records it).
  void (*scalar_replay)(const expr::program& p, const scalar_view& v, std::span<const any_grad> upstream,
                        std::span<const bool> needed, std::span<any_grad> grads);
  /// replay_forward with the services below: every slot's value, op by op.
  core::small_vector<core::any_tensor, 16> (*values)(const expr::program& p, std::span<const core::any_tensor> leaves,
                                         std::span<const core::cell> literals);
  /// run_op_by_op with the services below.
  core::any_tensor (*op_by_op)(const expr::program& p, std::span<const core::any_tensor> leaves,
                               std::span<const core::cell> literals);
  const eager_services* services;
  /// Throws the error for an evaluation whose result holds NaN or infinities (Note [numerics
  /// checks]); installed by enable_check_numerics, so a unit that checks nothing does not compile it.
  void (*report_nonfinite)(const expr::program& p, std::span<const core::any_tensor> leaves,
                           std::span<const core::cell> literals, const fg::shape& out, core::nonfinite f,
                           const char* reduction);
  /// report_nonfinite for an evaluation's leaves as leaf_refs.
  void (*report_evaluation)(const expr::program& p, std::span<const leaf_ref> leaves,
                            std::span<const core::cell> literals, const fg::shape& out, core::nonfinite f,
                            const char* reduction);
  /// Records an evaluation over tensors as a fused entry (eager::record_evaluation).
  void (*record)(const expr::program& p, std::span<const leaf_ref> leaves, std::span<const core::cell> lits,
                 const fg::shape& iter, const fg::shape& gshape, fg::device d, const fg::shape& out_shape,
                 tensor_id out_id, core::any_tensor* derivative, entry_maker make_entry, const void* context);
  /// Records a one-element host evaluation as a scalar entry (eager::record_scalar).
  void (*record_scalar)(const expr::program& p, std::span<const leaf_ref> leaves, std::span<const core::cell> lits,
                        std::size_t iter_rank, std::size_t g_rank, tensor_id out_id, const slot_meta& out_meta);
};
inline std::atomic<const entry_engines*> installed_engines{nullptr};

/// The installed engines (Note [installed engines]).
inline const entry_engines& engines() {
  const entry_engines* e = installed_engines.load(std::memory_order_acquire);
  FG_CHECK(e != nullptr, std::logic_error, "fusegrad: a backward step ran outside gradient_tape::gradient");
  return *e;
}

/// The backward step of an evaluation over tensors. Which engine runs it:
/// - the saved derivative (Note [saved derivative], eager/saved_derivative.hpp), when one was
///   saved and no tape records the step: the gradient is upstream * derivative;
/// - else on the host, when no tape records the step: block_backward (Note [block backward]);
/// - else (a tape records the step, or the tensors live on a device): replay_backward, op by op.
struct fused_entry : backward_fn {
  const expr::program* prog;
  core::small_vector<core::any_tensor, 4> leaves;          ///< per leaf position
  core::small_vector<core::cell, 2> literals;
  core::small_vector<std::uint8_t, 4> input_of;      ///< per leaf position
  core::small_vector<program_input, 2> inputs;
  fg::shape iter, gshape;
  core::any_tensor derivative;  ///< the saved derivative, or nothing

  explicit fused_entry(const expr::program& p) : prog(&p) {}

  const char* name() const noexcept override { return prog->name(); }

  void run(std::span<const any_grad> upstream, std::span<const bool> needed, std::span<any_grad> grads) override {
    engines().fused(*this, upstream, needed, grads);
  }

  /// The backward step itself: what the installed engines run (Note [installed engines]).
  void execute(std::span<const any_grad> upstream, std::span<const bool> needed, std::span<any_grad> grads) {
    core::any_tensor g = from_any_grad(upstream[0]);
    if (std::holds_alternative<std::monostate>(g)) return;
    const bool recorded = records(g);
    if (!std::holds_alternative<std::monostate>(derivative) && !recorded) {
      run_saved(g, needed, grads);
      if (core::checking_numerics()) [[unlikely]]
        diagnose(core::shape_of(g) != gshape ? plain_reshape(g, gshape) : g, needed, grads);
      return;
    }
    bool host = core::device_of(g).is_cpu();
    for (const core::any_tensor& l : leaves) host = host && core::device_of(l).is_cpu();
    if (host && !recorded) {
      if (core::shape_of(g) != gshape) g = plain_reshape(g, gshape);
      block_backward(*prog, leaves, literals, input_of.data(), inputs, iter, g, needed, grads);
      if (core::checking_numerics()) [[unlikely]]
        diagnose(g, needed, grads);
      return;
    }
    const eager_services& sv = *engines().services;
    if (core::shape_of(g) != gshape) g = sv.reshape(g, gshape);
    autodiff::replay_backward(*prog, leaves, literals, input_of.data(), inputs, iter, g, needed, grads, sv);
  }

 protected:
  /// True when a tape records now and tracks one of this step's inputs or its upstream
  /// gradient: then the step runs op by op so that the tape sees it.
  bool records(const core::any_tensor& g) const {
    if (!recording()) return false;
    const tensor_id gid = core::id_of(g);
    if (any_tape_tracks(std::span<const tensor_id>(&gid, 1))) return true;
    for (const program_input& in : inputs)
      if (any_tape_tracks(std::span<const tensor_id>(&in.id, 1))) return true;
    return false;
  }

 private:
  /// With numerics checks on (Note [numerics checks]): when a gradient holds NaN or Inf, the
  /// step runs again op by op, which names the op whose rule made it (no tape records it).
  void diagnose(const core::any_tensor& g, std::span<const bool> needed, std::span<any_grad> grads) {
    bool bad = false;
    for (std::size_t k = 0; k < grads.size(); ++k) bad = bad || (needed[k] && autodiff::find_nonfinite(grads[k]));
    if (!bad) return;
    const all_tapes_paused quiet;
    std::vector<any_grad> again(grads.size());
    autodiff::replay_backward(*prog, leaves, literals, input_of.data(), inputs, iter, g, needed, again,
                              *engines().services);
  }
  static core::any_tensor plain_reshape(const core::any_tensor& g, const fg::shape& s) {
    return std::visit(
        [&](const auto& t) -> core::any_tensor {
          if constexpr (std::is_same_v<std::decay_t<decltype(t)>, std::monostate>) return {};
          else return std::decay_t<decltype(t)>(t.buffer(), s, t.id());
        },
        g);
  }
  /// The one input's gradient from the saved derivative: the derivative itself for an upstream
  /// of exactly 1 (a loss), else upstream * derivative (the upstream is one element: a loss).
  template <class T>
  any_grad saved_gradient(const tensor<T>& g, const tensor<T>& d) const {
    const tensor<T> hg = g.cpu();
    const T u = *hg.data();
    if (u == T(1)) return d;
    tensor<T> r(d.shape(), fg::device::cpu());
    for (std::size_t i = 0; i < d.size(); ++i) r.buffer()->data[i] = u * d.data()[i];
    return r;
  }
  void run_saved(const core::any_tensor& g, std::span<const bool> needed, std::span<any_grad> grads) const {
    if (!needed[0]) return;
    if (const auto* d = std::get_if<tensor<float>>(&derivative)) grads[0] = saved_gradient(std::get<tensor<float>>(g), *d);
    else grads[0] = saved_gradient(std::get<tensor<double>>(g), std::get<tensor<double>>(derivative));
  }
};

/// A scalar entry's values and layout: per leaf position its value, id, rank and input index
/// (no_input for a leaf that gets no gradient); per distinct floating-point input (in order of
/// first position) its dtype and rank.
struct scalar_view {
  const core::cell* values;
  const core::cell* literals;
  std::size_t n_leaves, n_literals;
  const tensor_id* ids;
  const std::uint8_t* ranks;
  const std::uint8_t* input_of;
  const dtype* types;
  const std::uint8_t* input_ranks;
  std::uint8_t n_inputs, iter_rank, g_rank;
};

inline void scalar_step(const expr::program& p, const scalar_view& v, const scalar_grad& up,
                        std::span<const bool> needed, std::span<std::optional<scalar_grad>> grads);

/// A scalar program's upstream gradient as a cell of its result's type (float32 or float64).
inline core::cell upstream_cell(const expr::program& p, const scalar_grad& up) {
  return p.types[p.result()] == dtype::float32 ? core::cell::of(static_cast<float>(up.value))
                                               : core::cell::of(up.value);
}
/// A gradient cell of floating type t as scalar_grad's value.
inline double cell_value(dtype t, core::cell c) {
  return t == dtype::float32 ? static_cast<double>(c.as<float>()) : c.as<double>();
}

/// Note [scalar entries]: scalar code (the Collatz and line-search loops) records one op per
/// statement on one-element tensors, where a fused entry's tensors and shapes cost more than
/// the arithmetic. A user-level evaluation over one element on the host records a
/// scalar_entry instead: the program, its leaves' values, ids and ranks, its literals. When
/// gradient() runs it and no tape would record the step, run_scalar computes each input's
/// gradient as a number (point_backward; for a program of one op over leaves, the most common,
/// its vjp rules called directly, without the engines' table), and gradient() passes numbers
/// (scalar_grad) between such entries without making tensors. When a tape would record the
/// step (a persistent tape differentiating its own gradient, nested tapes), run() rebuilds
/// one-element tensors bearing the original ids and replays the program op by op, as a fused
/// entry would. One type serves every program: the entry's arrays follow it in the arena
/// (Note [entry arena]), sized for its program's leaves and literals (at most max_leaves of
/// each).
struct scalar_entry final : backward_fn {
  /// The most leaf positions, and literals, of a program a scalar entry records.
  static constexpr std::size_t max_leaves = 8;
  const expr::program* prog;
  std::uint8_t n_inputs = 0, iter_rank = 0, g_rank = 0;

  explicit scalar_entry(const expr::program& p) : prog(&p) {}

  /// The bytes an entry of program p takes with its arrays.
  static std::size_t bytes(const expr::program& p) noexcept {
    return sizeof(scalar_entry) + (p.leaves + p.literals) * sizeof(core::cell) +
           p.leaves * (sizeof(tensor_id) + sizeof(dtype) + 3);
  }
  /// Its arrays, which follow it in this order: values and literals (cells), ids, input types,
  /// then ranks, input_of and input ranks (bytes).
  struct arrays {
    core::cell *values, *literals;
    tensor_id* ids;
    dtype* types;
    std::uint8_t *ranks, *input_of, *input_ranks;
  };
  arrays layout() noexcept {
    const std::size_t l = prog->leaves;
    arrays a;
    a.values = reinterpret_cast<core::cell*>(this + 1);
    a.literals = a.values + l;
    a.ids = reinterpret_cast<tensor_id*>(a.literals + prog->literals);
    a.types = reinterpret_cast<dtype*>(a.ids + l);
    a.ranks = reinterpret_cast<std::uint8_t*>(a.types + l);
    a.input_of = a.ranks + l;
    a.input_ranks = a.input_of + l;
    return a;
  }

  const char* name() const noexcept override { return prog->name(); }
  bool has_scalar_path() const noexcept override { return true; }

  void run_scalar(const scalar_grad& up, std::span<const bool> needed,
                  std::span<std::optional<scalar_grad>> grads) override {
    if (prog->code.size() == 1 && prog->literals == 0 && !core::checking_numerics()) {
      // One op over leaves (most scalar entries), run directly: without the general step's
      // arrays and the call through the engines' table (Note [scalar entries]).
      const arrays a = layout();
      core::cell sum[expr::max_arity];
      bool has[expr::max_arity] = {};
      one_op_point_backward(*prog, a.values, a.input_of, a.types, upstream_cell(*prog, up), needed, sum, has);
      for (std::size_t k = 0; k < n_inputs; ++k)
        if (has[k]) grads[k] = scalar_grad{cell_value(a.types[k], sum[k]), a.types[k], a.input_ranks[k]};
      return;
    }
    scalar_step(*prog, view(), up, needed, grads);
  }

  void run(std::span<const any_grad> upstream, std::span<const bool> needed, std::span<any_grad> grads) override {
    engines().scalar_replay(*prog, view(), upstream, needed, grads);
  }

 private:
  scalar_view view() {
    const arrays a = layout();
    return {a.values,   a.literals, prog->leaves,  prog->literals, a.ids,    a.ranks,
            a.input_of, a.types,    a.input_ranks, n_inputs,       iter_rank, g_rank};
  }
};
static_assert(alignof(scalar_entry) >= alignof(core::cell) && sizeof(scalar_entry) % alignof(core::cell) == 0);

/// A scalar entry's step as numbers (point_backward): each needed input's gradient. With
/// numerics checks on, a step that makes NaN or Inf runs again op by op, which names the op
/// (Note [numerics checks]).
inline void scalar_step(const expr::program& p, const scalar_view& v, const scalar_grad& up,
                        std::span<const bool> needed, std::span<std::optional<scalar_grad>> grads) {
  const dtype gt = p.types[p.result()];
  std::array<std::optional<core::cell>, scalar_entry::max_leaves> out{};
  engines().point(p, v.values, v.literals, v.input_of, v.types, upstream_cell(p, up), needed,
                  std::span<std::optional<core::cell>>(out.data(), v.n_inputs));
  auto as_double = [&](std::size_t k) { return cell_value(v.types[k], *out[k]); };
  if (core::checking_numerics()) [[unlikely]]
    for (std::size_t k = 0; k < v.n_inputs; ++k)
      if (needed[k] && out[k] && !std::isfinite(as_double(k))) {
        const any_grad ups[1] = {gt == dtype::float32 ? any_grad(tensor<float>(static_cast<float>(up.value)))
                                                      : any_grad(tensor<double>(up.value))};
        std::vector<any_grad> again(v.n_inputs);
        engines().scalar_replay(p, v, std::span<const any_grad>(ups, 1), needed, again);
        break;
      }
  for (std::size_t k = 0; k < v.n_inputs; ++k)
    if (needed[k] && out[k]) grads[k] = scalar_grad{as_double(k), v.types[k], v.input_ranks[k]};
}

/// The engines' own functions (Note [installed engines]).
inline void run_fused_entry(fused_entry& f, std::span<const any_grad> upstream, std::span<const bool> needed,
                            std::span<any_grad> grads) {
  f.execute(upstream, needed, grads);
}
/// A scalar entry's step over one-element tensors bearing the original ids, replayed op by op
/// as a fused entry would (Note [scalar entries]).
inline void replay_scalar_entry(const expr::program& p, const scalar_view& v, std::span<const any_grad> upstream,
                                std::span<const bool> needed, std::span<any_grad> grads) {
  fused_entry full(p);
  for (std::size_t q = 0; q < v.n_leaves; ++q) {
    core::any_tensor l = core::make_any_tensor(p.types[q], core::ones_shape(v.ranks[q]), fg::device::cpu(), v.ids[q]);
    std::memcpy(const_cast<void*>(core::data_of(l)), v.values[q].bytes, core::size_of(p.types[q]));
    full.leaves.push_back(std::move(l));
    full.input_of.push_back(v.input_of[q]);
  }
  for (std::size_t c = 0; c < v.n_literals; ++c) full.literals.push_back(v.literals[c]);
  for (std::size_t k = 0; k < v.n_inputs; ++k) {
    std::size_t q = 0;
    while (v.input_of[q] != k) ++q;
    full.inputs.push_back({v.ids[q], core::ones_shape(v.input_ranks[k]), v.types[k]});
  }
  full.iter = core::ones_shape(v.iter_rank);
  full.gshape = core::ones_shape(v.g_rank);
  full.execute(upstream, needed, grads);
}
inline core::small_vector<core::any_tensor, 16> replay_installed(const expr::program& p,
                                                                 std::span<const core::any_tensor> leaves,
                                                                 std::span<const core::cell> literals) {
  return replay_forward(p, leaves, literals, *engines().services);
}
inline core::any_tensor run_installed_op_by_op(const expr::program& p, std::span<const core::any_tensor> leaves,
                                         std::span<const core::cell> literals) {
  return autodiff::run_op_by_op(p, leaves, literals, *engines().services);
}
}  // namespace fusegrad::autodiff
