#pragma once
/// \file When expressions become tensors, and how evaluations are recorded on tapes. An
/// expression assigned to a tensor, printed, converted or consumed by a boundary op is
/// evaluated here in one fused pass (eval/dispatch.hpp) and, when a live tape watches one of
/// its floating-point leaves, recorded as ONE tape entry holding its program (Note [programs]),
/// leaves and literals: its backward step is compiled once for all expressions
/// (autodiff/program_entry.hpp). A loss saves its derivative in its forward pass (Note [saved
/// derivative]).

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>

#include "../autodiff/program_entry.hpp"
#include "../core/numerics.hpp"
#include "../eval/dispatch.hpp"
#include "device_backward.hpp"
#include "epilogue.hpp"
#include "program_of.hpp"
#include "saved_derivative.hpp"

namespace fusegrad {
namespace eager {

/// The index of id among the first n of ids, or n when it is not there: how an evaluation's
/// leaf positions find their distinct inputs (in order of first position).
template <class Ids>
std::uint8_t input_index(const Ids& ids, std::size_t n, tensor_id id) {
  std::uint8_t k = 0;
  while (k < n && ids[k] != id) ++k;
  return k;
}

/// Note [type-erased recording]: what the recording of an evaluation needs of each leaf is the
/// same whatever the expression: its id, shape, element type, first value and tensor. So an
/// expression only lists its leaves (leaf_ref) and literals and hands them, with its program,
/// to code written once, which the installed engines hold (Note [installed engines]):
/// record_evaluation (a fused entry), record_scalar (a scalar entry) and report_evaluation
/// (numerics checks). An expression compiles its forward loop, its program and the gathering of
/// its leaves (evaluation_refs), not its own copy of the recording, and a unit that never
/// constructs a tape compiles no recording at all.
using autodiff::leaf_ref;
template <class T>
leaf_ref ref_of(const tensor<T>& t) {
  return {&t, &t.shape(), t.data(), t.id(), dtype_of<T>()};
}
/// The leaf's tensor, shared.
inline core::any_tensor tensor_of(const leaf_ref& l) {
  switch (l.type) {
    case dtype::float32: return *static_cast<const tensor<float>*>(l.tensor);
    case dtype::float64: return *static_cast<const tensor<double>*>(l.tensor);
    case dtype::int32: return *static_cast<const tensor<std::int32_t>*>(l.tensor);
    case dtype::int64: return *static_cast<const tensor<std::int64_t>*>(l.tensor);
    case dtype::boolean: return *static_cast<const tensor<bool>*>(l.tensor);
  }
  return {};
}
/// The first element of a host leaf.
inline core::cell first_cell(const leaf_ref& l) {
  core::cell c{};
  switch (l.type) {  // constant sizes, so that each copy is one move
    case dtype::float64:
    case dtype::int64: std::memcpy(c.bytes, l.data, 8); break;
    case dtype::float32:
    case dtype::int32: std::memcpy(c.bytes, l.data, 4); break;
    case dtype::boolean: std::memcpy(c.bytes, l.data, 1); break;
  }
  return c;
}
inline bool is_floating(dtype t) { return t == dtype::float32 || t == dtype::float64; }
/// An expression's leaves and literals, in program order, as the type-erased recording and
/// checks take them.
template <class E>
struct evaluation_refs {
  static constexpr std::size_t L = expr::leaf_count<E>::value, C = expr::literal_count<E>::value;
  std::array<leaf_ref, L> leaves;
  std::array<core::cell, (C > 0 ? C : 1)> lits;
  explicit evaluation_refs(const E& e) {
    std::size_t q = 0;
    expr::for_each_leaf(e, [&](const auto& l) FG_INLINE { leaves[q++] = ref_of(l.value); });
    if constexpr (C > 0) {
      cell_sink sink{lits.data()};
      collect_literals(e, sink);
    }
  }
  std::span<const core::cell> literals() const { return {lits.data(), C}; }
};

/// Records a one-element host evaluation of program p over `leaves` and `lits` (at most
/// scalar_entry::max_leaves of each) as a scalar entry (Note [scalar entries]). The entry is
/// written in place at the end of the entry arena, in one pass over the leaves, and taken only
/// when a tape records it (Note [entry arena]).
inline void record_scalar(const expr::program& p, std::span<const leaf_ref> leaves, std::span<const core::cell> lits,
                          std::size_t iter_rank, std::size_t g_rank, tensor_id out_id,
                          const autodiff::slot_meta& out_meta) {
  using S = autodiff::scalar_entry;
  const std::size_t bytes = S::bytes(p);
  S* e = new (autodiff::arena_reserve(bytes)) S(p);
  const S::arrays a = e->layout();
  // Per leaf position its value, id, rank and input; per distinct floating-point input (in
  // order of first position) its id, type and rank.
  std::array<tensor_id, S::max_leaves> input_ids;
  std::size_t n_inputs = 0;
  for (std::size_t q = 0; q < leaves.size(); ++q) {
    const leaf_ref& l = leaves[q];
    const auto rank = static_cast<std::uint8_t>(l.shape->rank());
    a.values[q] = first_cell(l);
    a.ids[q] = l.id;
    a.ranks[q] = rank;
    a.input_of[q] = autodiff::no_input;
    if (is_floating(l.type)) {
      const std::uint8_t k = input_index(input_ids, n_inputs, l.id);
      if (k == n_inputs) {
        input_ids[k] = l.id;
        a.types[k] = l.type;
        a.input_ranks[k] = rank;
        ++n_inputs;
      }
      a.input_of[q] = k;
    }
  }
  if (n_inputs == 0) return;
  for (std::size_t c = 0; c < lits.size(); ++c) a.literals[c] = lits[c];
  e->n_inputs = static_cast<std::uint8_t>(n_inputs);
  e->iter_rank = static_cast<std::uint8_t>(iter_rank);
  e->g_rank = static_cast<std::uint8_t>(g_rank);
  const std::span<const tensor_id> ins(input_ids.data(), n_inputs);
  const tensor_id outs[1] = {out_id};
  auto take = [&] {
    std::shared_ptr<std::byte> block;
    autodiff::arena_commit(bytes, block);
    return std::shared_ptr<autodiff::backward_fn>(std::move(block), e);
  };
  std::vector<autodiff::tape_state*>& tapes = autodiff::tape_stack();
  if (tapes.size() == 1) {
    // One tape, the common case: its recording step inline, without record_made's general loops.
    autodiff::tape_state& t = *tapes.front();
    std::uint32_t in_slots[S::max_leaves];
    if (!t.paused && t.find_inputs(ins, in_slots)) t.append(take(), ins, in_slots, outs, &out_meta);
    return;
  }
  autodiff::record(ins, outs, &out_meta, take);
}

/// Records an evaluation of program p over `leaves` and `lits` (evaluated on device d over
/// `iter`, its upstream gradient reshaped to `gshape`, its result of shape `out_shape` and id
/// `out_id`) as a fused entry on the tapes that track one of its floating-point leaves (Note
/// [type-erased recording]). `derivative`: the saved derivative (Note [saved derivative]),
/// taken by the entry; null when none was saved. `make_entry(p, context)`, when given, makes
/// the entry (a device entry that also keeps its expression, Note [device backward]); by
/// default it is a plain fused_entry.
using autodiff::entry_maker;
inline void record_evaluation(const expr::program& p, std::span<const leaf_ref> leaves,
                              std::span<const core::cell> lits, const fg::shape& iter, const fg::shape& gshape,
                              fg::device d, const fg::shape& out_shape, tensor_id out_id,
                              core::any_tensor* derivative, entry_maker make_entry = nullptr,
                              const void* context = nullptr) {
  const autodiff::slot_meta out_meta{&out_shape, p.types[p.result()], d};
  core::small_vector<std::uint8_t, 4> input_of;
  core::small_vector<autodiff::program_input, 2> inputs;
  autodiff::id_list ids;
  for (const leaf_ref& l : leaves) {
    std::uint8_t k = autodiff::no_input;
    if (is_floating(l.type)) {
      k = input_index(ids, ids.size(), l.id);
      if (k == ids.size()) {
        ids.push_back(l.id);
        inputs.push_back({l.id, *l.shape, l.type});
      }
    }
    input_of.push_back(k);
  }
  if (ids.empty()) return;
  const tensor_id outs[1] = {out_id};
  autodiff::record(std::span<const tensor_id>(ids.data(), ids.size()), outs, &out_meta, [&] {
    // From the block cache (Note [buffer cache]): an entry holds shapes and tensors, often
    // a kilobyte, which malloc serves slowly in a loop.
    std::shared_ptr<autodiff::fused_entry> fn =
        make_entry ? make_entry(p, context)
                   : std::allocate_shared<autodiff::fused_entry>(core::host_allocator<autodiff::fused_entry>{}, p);
    for (const leaf_ref& l : leaves) fn->leaves.push_back(tensor_of(l));
    for (const core::cell& c : lits) fn->literals.push_back(c);
    fn->input_of = std::move(input_of);
    fn->inputs = std::move(inputs);
    fn->iter = iter;
    fn->gshape = gshape;
    if (derivative) fn->derivative = std::move(*derivative);
    return std::shared_ptr<autodiff::backward_fn>(std::move(fn));
  });
}

#if defined(FUSEGRAD_DEVICE)
/// record_fused on a device: the entry also keeps the expression (Note [device backward]).
template <class E>
void record_on_device(const E& e, const fg::shape& iter, const fg::shape& gshape, fg::device d,
                      const tensor<typename E::value_type>& out, tensor<typename E::value_type>* derivative) {
  const evaluation_refs<E> refs(e);
  core::any_tensor dv;
  if (derivative) dv = std::move(*derivative);
  const entry_maker make = [](const expr::program& p, const void* ex) -> std::shared_ptr<autodiff::fused_entry> {
    return std::allocate_shared<device_fused_entry<E>>(core::host_allocator<device_fused_entry<E>>{}, p,
                                                       *static_cast<const E*>(ex));
  };
  autodiff::engines().record(program_of<E>(), refs.leaves, refs.literals(), iter, gshape, d, out.shape(), out.id(),
                             derivative ? &dv : nullptr, make, &e);
}
#endif

/// Records e (evaluated on device d over `iter`, its upstream gradient reshaped to `gshape`) on
/// the tapes that track one of its floating-point leaves. `derivative`: the saved derivative
/// (Note [saved derivative]), taken by the entry; null when none was saved.
template <class E>
void record_fused(const E& e, const fg::shape& iter, const fg::shape& gshape, fg::device d,
                  const tensor<typename E::value_type>& out, tensor<typename E::value_type>* derivative = nullptr) {
  if constexpr (expr::leaf_count<E>::value > 0) {
#if defined(FUSEGRAD_DEVICE)
    // On a device the entry also keeps the expression (Note [device backward]).
    if (d.is_gpu()) return record_on_device(e, iter, gshape, d, out, derivative);
#endif
    using R = evaluation_refs<E>;
    const R refs(e);
    const autodiff::entry_engines& engines = autodiff::engines();  // installed: a tape records
    if constexpr (R::L <= autodiff::scalar_entry::max_leaves && R::C <= autodiff::scalar_entry::max_leaves) {
      if (iter.elements() == 1 && d.is_cpu() && !derivative)
        return engines.record_scalar(program_of<E>(), refs.leaves, refs.literals(), iter.rank(), gshape.rank(),
                                     out.id(), autodiff::meta_of(out));
    }
    core::any_tensor dv;
    if (derivative) dv = std::move(*derivative);
    engines.record(program_of<E>(), refs.leaves, refs.literals(), iter, gshape, d, out.shape(), out.id(),
                   derivative ? &dv : nullptr, nullptr, nullptr);
  }
}

/// Note [numerics checks]: with fg::debugging::enable_check_numerics on, every floating-point
/// result is checked for NaN and infinities as it is made, in each op's epilogue (Note [eager
/// epilogue]), and gradients where gradient() checks what each backward step returns.
/// A fused evaluation that made one (an elementwise pass, a fused reduction, with or without
/// keepdims, or an evaluation op by op) is replayed op by op from its program (no tape records
/// the replay), and the error names the first op whose result holds one, with its operands'
/// shapes, or the reduction when the chain's values are finite. It is checked before any reshape
/// to the result's shape, so the error never names the reshape.
/// Off, a check costs one relaxed load per evaluation. enable_check_numerics installs the
/// engines (Note [installed engines]) that the replay runs on.
///
/// Throws the error for an evaluation of program p over `leaves` and `literals` whose result,
/// of shape `out`, holds what f says; `reduction`: the reduction applied to p's result, if any.
[[noreturn]] inline void report_nonfinite(const expr::program& p, std::span<const core::any_tensor> leaves,
                                          std::span<const core::cell> literals, const fg::shape& out, core::nonfinite f,
                                          const char* reduction) {
  auto shapes = [&](const core::small_vector<core::any_tensor, 16>& v, const expr::instr& in) {
    std::string s;
    for (std::size_t j = 0; j < in.op->arity; ++j) s += (j ? ", " : "") + core::shape_of(v[in.args[j]]).str();
    return s;
  };
  core::small_vector<core::any_tensor, 16> value;
  {
    const autodiff::all_tapes_paused quiet;  // the replay is a diagnosis: no tape records it
    value = autodiff::engines().values(p, leaves, literals);
  }
  for (std::size_t q = 0; q < p.leaves; ++q)
    if (const core::nonfinite g = core::find_nonfinite(value[q]))
      throw value_error(core::cat("fg::debugging: an input of shape ", core::shape_of(value[q]), " holds ", g.words(),
                                  " values (check_numerics)"));
  const std::size_t first = p.first_instr();
  for (std::size_t k = 0; k < p.code.size(); ++k) {
    const core::nonfinite g = core::find_nonfinite(value[first + k]);
    if (!g) continue;
    throw value_error(core::cat("fg::debugging: '", p.code[k].op->name, "' produced ", g.words(),
                                " values from operands of shape ", shapes(value, p.code[k]),
                                " (in an evaluation of shape ", out, "; check_numerics)"));
  }
  throw value_error(core::cat("fg::debugging: '", reduction ? reduction : "evaluation", "' produced ", f.words(),
                              " values in a result of shape ", out, " (check_numerics)"));
}

/// The error for an evaluation of program p whose result, of shape `out`, holds what f says:
/// report_nonfinite over the leaves' tensors.
inline void report_evaluation(const expr::program& p, std::span<const leaf_ref> leaves,
                              std::span<const core::cell> literals, const fg::shape& out, core::nonfinite f,
                              const char* reduction) {
  core::small_vector<core::any_tensor, 4> tensors;
  for (const leaf_ref& l : leaves) tensors.push_back(tensor_of(l));
  report_nonfinite(p, tensors, literals, out, f, reduction);
}
/// Throws the error for the result r of evaluating e (then reduced by `reduction`, if given),
/// which holds what f says: Note [numerics checks].
template <class E, class T>
void report_fused(const E& e, const tensor<T>& r, core::nonfinite f, const char* reduction = nullptr) {
  const evaluation_refs<E> refs(e);
  autodiff::engines().report_evaluation(program_of<E>(), refs.leaves, refs.literals(), r.shape(), f, reduction);
}

/// Evaluates e broadcast to `out` in one fused pass, recorded.
template <class E, class T = typename E::value_type>
tensor<T> evaluate_to(const E& e, const fg::shape& out) {
  if constexpr (expr::is_leaf<E>::value)
    if (e.shape() == out) return e.value;
  const fg::device d = dispatch::common_device(e);
  tensor<T> r(out, d);
  if (out.elements() == 1 && d.is_cpu()) {
    ++core::counters().passes;
    *r.buffer()->data = expr::point_value(e);
  } else {
    dispatch::run_elementwise(e, out, d, r.buffer()->data);
  }
  epilogue(  // Note [eager epilogue]
      r, [&](const auto& y, core::nonfinite f) { report_fused(e, y, f); },
      [&](const auto& y) { record_fused(e, out, out, d, y); });
  return r;
}

/// Evaluates e one op at a time from its program: the op-by-op mode (each op recorded). Its
/// result is checked as a fused evaluation's is, and the error names the same op (Note
/// [numerics checks]).
template <class E, class T = typename E::value_type>
tensor<T> evaluate_unfused(const E& e) {
  autodiff::install_entry_engines();
  tensor<T> r = std::get<tensor<T>>(run_expression_op_by_op(e));
  if constexpr (std::is_floating_point_v<T>)
    if (core::checking_numerics()) [[unlikely]]
      if (const core::nonfinite f = core::find_nonfinite(r)) report_fused(e, r, f);
  return r;
}

/// Mean of e over the axes that `iter` has and `keep` reduces (keep: iter's rank, 1 on the
/// reduced axes): one fused pass over e; the reduced sums are divided by the count as they are
/// written out (as numpy does: sum, then divide). Recorded as the sum of e / count.
template <class E, class T = typename E::value_type>
tensor<T> mean_to(const E& e, const fg::shape& iter, const fg::shape& keep, std::size_t count) {
  const fg::device dev = dispatch::common_device(e);
  tensor<T> r(keep, dev);
  const T n = static_cast<T>(count);
  dispatch::run_reduction<ops::sum_reducer<T>>(e, iter, keep, dev, r.buffer()->data, n);
  epilogue(
      r, [&](const auto& y, core::nonfinite f) { report_fused(e, y, f, "reduce_mean"); },
      [&](const auto& y) { record_fused(e / n, iter, keep, dev, y); });
  return r;
}

/// Sum of e, broadcast over `iter`, reduced to `target` (a shape iter broadcasts from): the
/// reduction of a gradient over broadcast axes, and reduce_sum. One fused pass, recorded.
template <class E, class T = typename E::value_type>
tensor<T> sum_to(const E& e, const fg::shape& iter, const fg::shape& target) {
  if (target == iter) return evaluate_to(e, iter);
  const fg::shape keep = core::padded_to_rank(target, iter.rank());
  const fg::device dev = dispatch::common_device(e);
  tensor<T> r(target, dev);
  if constexpr (may_save_derivative<E>()) {
    if (keep.elements() == 1) {
      typename ops::sum_reducer<T>::acc sum(0);
      if (tensor<T> dr = sum_saving_derivative(e, iter, &sum); dr.defined()) {
        *r.buffer()->data = static_cast<T>(sum);
        // (A derivative is saved only while a tape records.)
        epilogue(
            r, [&](const auto& y, core::nonfinite f) { report_fused(e, y, f, "reduce_sum"); },
            [&](const auto& y) { record_fused(e, iter, keep, dev, y, &dr); });
        return r;
      }
    }
  }
  dispatch::run_reduction<ops::sum_reducer<T>>(e, iter, keep, dev, r.buffer()->data);
  epilogue(
      r, [&](const auto& y, core::nonfinite f) { report_fused(e, y, f, "reduce_sum"); },
      [&](const auto& y) { record_fused(e, iter, keep, dev, y); });
  return r;
}

/// The eager ops the backward engines need (autodiff/program_backward.hpp). On the host they
/// are type-erased, like the programs they serve: add and broadcast run an op's table
/// (apply_to), the sum over broadcast axes the host reduction of the block engine, each
/// recorded as a program of one op; only device tensors go through typed evaluations. So the
/// engines instantiate no expression of their own (docs/design.md, "Replay").
template <class F>
core::any_tensor on_floating(const core::any_tensor& t, F&& f) {
  if (const auto* a = std::get_if<tensor<float>>(&t)) return f(*a);
  return f(std::get<tensor<double>>(t));
}
inline core::any_tensor service_apply(const expr::op_table& op, const core::any_tensor* args);
inline core::any_tensor apply_to(const expr::op_table& op, const core::any_tensor* args, const fg::shape& out);
inline void record_program(const expr::program& p, std::span<const core::any_tensor> leaves,
                           std::span<const core::cell> literals, const fg::shape& iter, const fg::shape& gshape,
                           const core::any_tensor& out);
/// The identity op's table for t's floating type (a cast to its own type): what a broadcast
/// and a sum over broadcast axes record.
inline const expr::op_table& identity_table(const core::any_tensor& t) {
  return std::holds_alternative<tensor<float>>(t) ? table_of<ops::cast_op<float>, float>()
                                                  : table_of<ops::cast_op<double>, double>();
}
inline core::any_tensor service_add(const core::any_tensor& a, const core::any_tensor& b) {
  const core::any_tensor args[2] = {a, b};
  return service_apply(std::holds_alternative<tensor<float>>(a) ? table_of<ops::add_op, float, float>()
                                                                 : table_of<ops::add_op, double, double>(),
                       args);
}
/// t (float32 or float64) summed over the axes it has beyond s or where s is 1: recorded as the
/// identity over t's shape with an upstream gradient of s's elements, whose backward step
/// broadcasts it back.
inline core::any_tensor service_sum_to(const core::any_tensor& t, const fg::shape& s) {
  const fg::shape& iter = core::shape_of(t);
  if (iter == s) return t;
#if defined(FUSEGRAD_DEVICE)
  if (core::device_of(t).is_gpu())
    return on_floating(t, [&](const auto& x) -> core::any_tensor {
      using T = typename std::decay_t<decltype(x)>::value_type;
      return sum_to(expr::leaf<T>{x}, iter, s);
    });
#endif
  const fg::shape keep = core::padded_to_rank(s, iter.rank());
  core::any_tensor r =
      on_floating(t, [&](const auto& x) -> core::any_tensor { return autodiff::sum_host_to(x, iter, s); });
  const expr::program& p = expr::unit_program(identity_table(t));
  epilogue(
      r, [&](const auto&, core::nonfinite f) { autodiff::engines().report_nonfinite(p, std::span(&t, 1), {}, s, f, "reduce_sum"); },
      [&](const auto& y) { record_program(p, std::span(&t, 1), {}, iter, keep, y); });
  return r;
}
inline core::any_tensor service_broadcast(const core::any_tensor& t, const fg::shape& s) {
  if (core::shape_of(t) == s) return t;
#if defined(FUSEGRAD_DEVICE)
  if (core::device_of(t).is_gpu())
    return on_floating(t, [&](const auto& x) -> core::any_tensor {
      using T = typename std::decay_t<decltype(x)>::value_type;
      return evaluate_to(expr::leaf<T>{x}, s);
    });
#endif
  return apply_to(identity_table(t), &t, s);
}
/// t in shape s (as many elements), sharing its buffer: recorded as the identity over t's shape
/// whose upstream gradient, of shape s, is reshaped back to t's (what a fused entry's backward
/// step does to any upstream gradient), so that no reshape of each element type is compiled
/// with the engines.
inline core::any_tensor service_reshape(const core::any_tensor& t, const fg::shape& s) {
  const fg::shape& from = core::shape_of(t);
  FG_CHECK(s.elements() == from.elements(), std::logic_error, "fusegrad: the backward replay reshaped ", from, " to ",
           s, ", which has another number of elements");
  const core::any_tensor r = on_floating(t, [&](const auto& x) -> core::any_tensor {
    return std::decay_t<decltype(x)>(x.buffer(), s, core::next_id());
  });
  if (autodiff::recording()) record_program(expr::unit_program(identity_table(t)), std::span(&t, 1), {}, from, from, r);
  return r;
}
/// A rank-0 tensor of type d holding c, on device dev.
inline core::any_tensor service_constant(core::cell c, dtype d, fg::device dev) {
  core::any_tensor t = core::make_any_tensor(d, fg::shape{}, dev);
  void* data = const_cast<void*>(core::data_of(t));
  if (dev.is_cpu()) std::memcpy(data, c.bytes, core::size_of(d));
  else core::copy_between(data, dev, c.bytes, fg::device::cpu(), core::size_of(d));
  return t;
}

/// Records an evaluation of program p (its leaves and literals given) on the tapes that track
/// one of its floating-point leaves: record_fused for tensors known only at run time.
inline void record_program(const expr::program& p, std::span<const core::any_tensor> leaves,
                           std::span<const core::cell> literals, const fg::shape& iter, const fg::shape& gshape,
                           const core::any_tensor& out) {
  core::small_vector<leaf_ref, 4> refs;
  for (const core::any_tensor& l : leaves)
    refs.push_back(std::visit(
        [&](const auto& t) -> leaf_ref {
          if constexpr (std::is_same_v<std::decay_t<decltype(t)>, std::monostate>)
            throw std::logic_error(core::cat("fusegrad: a recorded '", p.name(), "' was given an empty leaf"));
          else return ref_of(t);
        },
        l));
  record_evaluation(p, refs, literals, iter, gshape, core::device_of(out), core::shape_of(out), core::id_of(out),
                    nullptr);
}

/// One program op applied to tensors as an eager op: one pass over the broadcast shape, in
/// blocks, with the op's block rule, recorded (what op-by-op evaluation and backward replays
/// run: one loop per op, not per expression).
inline core::any_tensor service_apply(const expr::op_table& op, const core::any_tensor* args) {
  fg::shape out = core::shape_of(args[0]);
  const fg::device d = core::device_of(args[0]);
  for (std::size_t j = 1; j < op.arity; ++j) {
    const fg::shape& s = core::shape_of(args[j]);
    if (s != out) out = s.rank() == 0 ? out : (out.rank() == 0 ? s : core::broadcast_shapes(out, s, op.name));
    FG_CHECK(core::device_of(args[j]) == d, device_error, "fusegrad: operands of one expression live on ", d.str(),
             " and ", core::device_of(args[j]).str(),
             "; move one with .gpu() or .cpu() (fusegrad never copies between devices silently)");
  }
  if (d.is_gpu()) {
    if (!op.device_forward)
      throw device_error(core::cat("fusegrad: ", op.name, " on ", d.str(), " needs the device backend"));
    return op.device_forward(args);
  }
  return apply_to(op, args, out);
}
/// op applied to host tensors broadcast to `out` (which their shapes broadcast to), recorded.
inline core::any_tensor apply_to(const expr::op_table& op, const core::any_tensor* args, const fg::shape& out) {
  core::any_tensor r = core::make_any_tensor(op.result, out);
  ++core::counters().passes;
  const std::size_t n = out.elements(), elem = core::size_of(op.result);
  auto* dst = static_cast<unsigned char*>(const_cast<void*>(core::data_of(r)));
  std::unique_ptr<unsigned char[]> ws(new unsigned char[2 * expr::max_arity * autodiff::grad_block * 8]);
  core::small_vector<autodiff::broadcast_reader, 3> readers;
  for (std::size_t j = 0; j < op.arity; ++j)
    readers.push_back(autodiff::broadcast_reader(core::data_of(args[j]), core::size_of(op.args[j]),
                                                 core::shape_of(args[j]), out,
                                                 ws.get() + (expr::max_arity + j) * autodiff::grad_block * 8));
  for (std::size_t start = 0; start < n; start += autodiff::grad_block) {
    const std::size_t m = std::min(autodiff::grad_block, n - start);
    const void* a[expr::max_arity] = {};
    for (std::size_t j = 0; j < op.arity; ++j)
      a[j] = readers[j].read(start, m, ws.get() + j * autodiff::grad_block * 8);
    op.forward(a, dst + start * elem, m);
  }
  if ((op.result == dtype::float32 || op.result == dtype::float64) && autodiff::recording())
    record_program(expr::unit_program(op), std::span<const core::any_tensor>(args, op.arity), {}, out, out, r);
  return r;
}

inline constexpr autodiff::eager_services services{&service_add,       &service_sum_to,    &service_reshape,
                                                   &service_constant, &service_broadcast, &service_apply};

}  // namespace eager

template <class T>
template <expression E>
tensor<T>::tensor(const E& e) {
  static_assert(std::same_as<typename E::value_type, T>,
                "fg::tensor<T>: the expression's element type is not T; convert with fg::cast<T>(expr)");
  *this = eager::evaluate_to(e, e.shape());
}

/// Evaluates an expression now (tensors are returned as they are, variables read).
template <tensor_like X>
tensor<value_type_of<X>> eval(const X& x) {
  if constexpr (expr::is_leaf<X>::value) return x.value;
  else if constexpr (expr::is_literal<X>::value) return tensor<value_type_of<X>>(x.value);
  else return tensor<value_type_of<X>>(x);
}
}  // namespace fusegrad

// The engines' definition (Note [separate engines]), unless one source file of the program
// compiles it.
#if !defined(FUSEGRAD_SEPARATE_ENGINES)
#include "engines.hpp"
#endif
