#pragma once
/// \file (Used with <fusegrad/eager/evaluate.hpp>, which evaluates expressions; the umbrella header has both.)
/// fg::gradient_tape: TensorFlow's GradientTape. Records, while alive on its thread,
/// the evaluations whose inputs it watches, and answers gradient(), jacobian() and
/// batch_jacobian() by walking its entries in reverse.
/// Note [tape lifetime]: a non-persistent tape releases every entry (and so every tensor its
/// backward functions saved) after answering gradient() once; any tape releases them when
/// reset() or destroyed. A backward step's saved tensors are released as soon as it has run
/// on a non-persistent tape.

#include <atomic>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "../core/numerics.hpp"
#include "../eval/creation.hpp"
#include "../ops/binary.hpp"
#include "program_entry.hpp"
#include "tape_state.hpp"

namespace fusegrad {

namespace autodiff {
/// A walk gradient as a tensor gradient; a number becomes a one-element host tensor of the
/// given shape, or of its rank's all-ones shape.
inline any_grad to_tensor_grad(grad_value&& g, const fg::shape* shape = nullptr) {
  return std::visit(
      [&](auto& v) -> any_grad {
        using G = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<G, scalar_grad>) {
          const fg::shape s = shape ? *shape : core::ones_shape(v.rank);
          if (v.type == dtype::float32) {
            tensor<float> t(s, fg::device::cpu());
            *t.buffer()->data = static_cast<float>(v.value);
            return t;
          }
          tensor<double> t(s, fg::device::cpu());
          *t.buffer()->data = v.value;
          return t;
        } else {
          return std::move(v);
        }
      },
      g);
}

inline grad_value from_tensor_grad(any_grad&& g) {
  return std::visit([](auto& v) -> grad_value { return std::move(v); }, g);
}

/// acc + g as tensors (gradients of one tensor from several readers, one of them not a
/// number of acc's type: a number becomes a one-element tensor of its rank).
inline grad_value add_as_tensors(grad_value&& acc, grad_value&& g) {
  any_grad at = to_tensor_grad(std::move(acc));
  any_grad bt = to_tensor_grad(std::move(g));
  if (!std::holds_alternative<std::monostate>(at) && at.index() == bt.index())
    at = to_any_grad(engines().services->add(from_any_grad(at), from_any_grad(bt)));
  return from_tensor_grad(std::move(at));
}

/// Rethrows the exception being handled with `prefix` before its message, as the same fusegrad
/// error type (a value_error stays a value_error, a shape_error a shape_error...). Exceptions
/// that are not fusegrad errors propagate unchanged. Call only inside a catch block.
[[noreturn]] inline void rethrow_with_prefix(const std::string& prefix) {
  try {
    throw;
  } catch (const shape_error& e) {
    throw shape_error(prefix + e.what());
  } catch (const value_error& e) {
    throw value_error(prefix + e.what());
  } catch (const index_error& e) {
    throw index_error(prefix + e.what());
  } catch (const tape_error& e) {
    throw tape_error(prefix + e.what());
  } catch (const device_error& e) {
    throw device_error(prefix + e.what());
  } catch (const out_of_memory& e) {
    throw out_of_memory(prefix + e.what());
  }
}

/// A reusable array of at least n Ts (std::vector<bool> has no bool array to lend).
template <class T>
class scratch {
 public:
  std::span<T> get(std::size_t n) {
    if (n > capacity_) {
      capacity_ = std::max<std::size_t>(n, 8);
      data_.reset(new T[capacity_]);
    }
    return {data_.get(), n};
  }

 private:
  std::unique_ptr<T[]> data_;
  std::size_t capacity_ = 0;
};

/// Note [gradient store]: the backward walk's gradients, by tape slot (Note [tape slots]).
/// Numbers (scalar_grad) sit in one flat array, 16 bytes a slot; any other gradient (a tensor,
/// or a number that met a tensor) in a table keyed by slot. Entries are walked in reverse
/// recording order, so when the walk reaches an entry, every entry that read its outputs has
/// already run: their gradients are complete and are taken out, and the store holds only the
/// gradients still flowing (and the sources', which are the answer).
class grad_store {
 public:
  enum class kind : std::uint8_t { none, number, other };

  explicit grad_store(std::size_t slots) : cells_(slots) {}

  kind at(std::uint32_t s) const noexcept { return cells_[s].k; }
  const scalar_grad& number(std::uint32_t s) const noexcept { return cells_[s].g; }
  /// The gradient of a slot holding kind::other.
  const grad_value& other(std::uint32_t s) const noexcept { return *table_.find(key(s)); }

  /// Slot s's gradient (monostate when none), left in place.
  grad_value get(std::uint32_t s) const {
    switch (cells_[s].k) {
      case kind::number: return cells_[s].g;
      case kind::other: return other(s);
      default: return {};
    }
  }
  /// Slot s's gradient, taken out.
  grad_value take(std::uint32_t s) {
    grad_value v;
    if (cells_[s].k == kind::number) {
      v = cells_[s].g;
    } else if (cells_[s].k == kind::other) {
      v = std::move(*table_.find(key(s)));
      table_.erase(key(s));
    }
    cells_[s].k = kind::none;
    return v;
  }
  void clear(std::uint32_t s) {
    if (cells_[s].k == kind::other) table_.erase(key(s));
    cells_[s].k = kind::none;
  }
  /// Sets slot s's gradient.
  void put(std::uint32_t s, grad_value&& v) {
    if (const auto* n = std::get_if<scalar_grad>(&v)) {
      const scalar_grad g = *n;
      clear(s);
      cells_[s] = {g, kind::number};
    } else if (std::holds_alternative<std::monostate>(v)) {
      clear(s);
    } else {
      table_[key(s)] = std::move(v);
      cells_[s].k = kind::other;
    }
  }
  /// Adds g into slot s's gradient; numbers of one type add as numbers (Note [scalar entries]).
  void add(std::uint32_t s, const scalar_grad& g) {
    cell& c = cells_[s];
    if (c.k == kind::none) {
      c = {g, kind::number};
    } else if (c.k == kind::number && c.g.type == g.type) {
      if (g.type == dtype::float32) c.g.value = static_cast<float>(c.g.value) + static_cast<float>(g.value);
      else c.g.value += g.value;
    } else {
      put(s, add_as_tensors(take(s), g));
    }
  }
  void add(std::uint32_t s, grad_value&& g) {
    if (std::holds_alternative<std::monostate>(g)) return;
    if (const auto* n = std::get_if<scalar_grad>(&g)) return add(s, *n);
    if (cells_[s].k == kind::none) return put(s, std::move(g));
    put(s, add_as_tensors(take(s), std::move(g)));
  }

 private:
  struct cell {
    scalar_grad g;
    kind k = kind::none;
  };
  static tensor_id key(std::uint32_t s) noexcept { return tensor_id{s} + 1; }  // table keys are nonzero

  std::vector<cell, core::host_allocator<cell>> cells_;
  id_map<grad_value> table_;
};
}  // namespace autodiff

/// What gradient() returns for a source the target does not depend on.
enum class unconnected_gradients { none, zero };

/// Options of a gradient tape, as in TensorFlow: `fg::gradient_tape tape({.persistent = true});`.
struct gradient_tape_options {
  bool persistent = false;               ///< allow many gradient() calls
  bool watch_accessed_variables = true;  ///< watch trainable variables read while recording
};

/// Records operations on watched tensors and variables for reverse-mode differentiation.
/// A tape records the ops of the thread that made it, and its methods throw fg::tape_error on
/// another thread. It may be destroyed on any thread: destroyed elsewhere, it hands its state
/// to its creator, which drops it from its tape stack before its next op and frees it (or, when
/// the creator has exited, frees it at once), so the creator never records on a tape that is
/// gone (Note [tape stack], tape_state.hpp).
class gradient_tape {
 public:
  using options = gradient_tape_options;

  /// Starts recording on this thread.
  explicit gradient_tape(options o = {});
  gradient_tape(const gradient_tape&) = delete;
  gradient_tape& operator=(const gradient_tape&) = delete;
  /// Stops recording; on another thread than the creator's too (see the class comment).
  ~gradient_tape();

  /// Makes the tape track x: evaluations that read x are recorded.
  template <class T>
  void watch(const tensor<T>& x) {
    check_thread("watch");
    if constexpr (!std::is_floating_point_v<T>) {
      warn_integer_watch();
    } else {
      FG_CHECK(x.defined(), value_error, "gradient_tape::watch: the tensor is undefined");
      state_.track(x.id());
    }
  }
  /// Makes the tape track a variable (also when watch_accessed_variables is false).
  template <class T>
  void watch(const variable<T>& v);

  /// The variables this tape watches, in the order it first saw them, of element type T.
  template <class T = float>
  std::vector<variable<T>> watched_variables() const;

  /// A scope in which this tape records nothing (TensorFlow's stop_recording). A guard that
  /// outlives its tape does nothing when it ends (Note [stop_recording guard]).
  [[nodiscard]] auto stop_recording() {
    check_thread("stop_recording");
    struct guard {
      autodiff::tape_state* s;
      tensor_id serial;
      bool was;
      explicit guard(autodiff::tape_state* st) : s(st), serial(st->serial), was(st->paused) { s->paused = true; }
      guard(const guard&) = delete;
      guard& operator=(const guard&) = delete;
      ~guard() {
        if (autodiff::is_live_tape(s, serial)) s->paused = was;
      }
    };
    return guard(&state_);
  }

  /// Forgets everything recorded and watched; the tape keeps recording. Throws fg::tape_error
  /// when called while this tape computes a gradient (from a backward function).
  void reset() {
    check_thread("reset");
    FG_CHECK(state_.walking == 0, tape_error,
             "gradient_tape::reset: called while the tape computes a gradient (from a backward function or a "
             "custom gradient); reset the tape after gradient() has returned");
    state_.clear();
    state_.variables.clear();
    state_.used = false;
  }

  /// d sum(target) / d source. Undefined (or zeros, with unconnected_gradients::zero) when unconnected.
  template <class Y, class S>
    requires(tensor_like<Y> && (ops::is_tensor<S>::value || ops::is_variable<S>::value))
  tensor<value_type_of<S>> gradient(const Y& target, const S& source,
                                    unconnected_gradients u = unconnected_gradients::none) {
    return std::move(gradient_impl(target, std::nullopt, {source_of(source)}, u)[0]).template as<value_type_of<S>>();
  }
  /// d sum(target * output_gradient) / d source (TensorFlow's output_gradients).
  template <class Y, class S>
    requires(tensor_like<Y> && (ops::is_tensor<S>::value || ops::is_variable<S>::value))
  tensor<value_type_of<S>> gradient(const Y& target, const S& source, const tensor<value_type_of<Y>>& output_gradient,
                                    unconnected_gradients u = unconnected_gradients::none) {
    return std::move(gradient_impl(target, output_gradient, {source_of(source)}, u)[0]).template as<value_type_of<S>>();
  }
  /// Gradients for several sources of one type, in source order.
  template <class Y, class S>
    requires(tensor_like<Y> && (ops::is_tensor<S>::value || ops::is_variable<S>::value))
  std::vector<tensor<value_type_of<S>>> gradient(const Y& target, std::initializer_list<S> sources,
                                                 unconnected_gradients u = unconnected_gradients::none) {
    return gradient(target, std::vector<S>(sources), u);
  }
  template <class Y, class S>
    requires(tensor_like<Y> && (ops::is_tensor<S>::value || ops::is_variable<S>::value))
  std::vector<tensor<value_type_of<S>>> gradient(const Y& target, const std::vector<S>& sources,
                                                 unconnected_gradients u = unconnected_gradients::none) {
    std::vector<source> src;
    for (const auto& s : sources) src.push_back(source_of(s));
    auto r = gradient_impl(target, std::nullopt, src, u);
    std::vector<tensor<value_type_of<S>>> out;
    for (auto& g : r) out.push_back(std::move(g).template as<value_type_of<S>>());
    return out;
  }
  /// Gradients for sources of mixed kinds given with std::tie, as a tuple for structured bindings:
  /// `auto [dx, dw] = tape.gradient(y, std::tie(x, w));`.
  template <class Y, class... S>
    requires(tensor_like<Y>)
  std::tuple<tensor<value_type_of<S>>...> gradient(const Y& target, const std::tuple<S&...>& sources,
                                                   unconnected_gradients u = unconnected_gradients::none) {
    std::vector<source> src =
        fg::core::apply([&](const auto&... s) { return std::vector<source>{source_of(s)...}; }, sources);
    auto r = gradient_impl(target, std::nullopt, src, u);
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::tuple<tensor<value_type_of<S>>...>{std::move(r[I]).template as<value_type_of<S>>()...};
    }(std::index_sequence_for<S...>{});
  }

  /// The full Jacobian: shape target.shape() + source.shape().
  template <class Y, class S>
  tensor<value_type_of<S>> jacobian(const Y& target, const S& source,
                                    unconnected_gradients u = unconnected_gradients::none);
  /// Per-example Jacobian for batched target (b, ...) and source (b, ...): shape (b, ...y, ...x).
  template <class Y, class S>
  tensor<value_type_of<S>> batch_jacobian(const Y& target, const S& source,
                                          unconnected_gradients u = unconnected_gradients::none);

  /// True for a persistent tape.
  bool persistent() const noexcept { return state_.persistent; }
  /// Number of entries recorded (each fused evaluation or op counts once). Like
  /// watched_variables(), it may be asked on another thread only once the creator has exited.
  std::size_t size() const {
    check_reader_thread("size");
    return state_.entries.size();
  }

 private:
  struct source {
    tensor_id id;
    fg::shape shape;
    dtype type;
  };
  /// A gradient as computed, before it takes its source's type.
  struct result {
    autodiff::any_grad g;
    template <class T>
    tensor<T> as() && {
      if constexpr (std::is_floating_point_v<T>) {
        if (auto* t = std::get_if<tensor<T>>(&g)) return std::move(*t);
      }
      return {};
    }
  };

  template <class T> source source_of(const tensor<T>& t) const {
    FG_CHECK(t.defined(), value_error, "gradient_tape::gradient: a source tensor is undefined");
    return {t.id(), t.shape(), dtype_of<T>()};
  }
  template <class T> source source_of(const variable<T>& v) const;
  /// What jacobian() and batch_jacobian() (op) check before anything else: the thread, and that
  /// a non-persistent tape has not been used.
  void check_jacobian_call(const char* op) const {
    check_thread(op);
    FG_CHECK(!state_.used || state_.persistent, tape_error, "gradient_tape::", op,
             ": GradientTape.gradient can only be called once on non-persistent tapes");
  }
  /// The loop of jacobian() (b = 1) and batch_jacobian() (b examples): one backward pass per
  /// element j of an example, seeded with a 1 at j in every example, each example's gradient
  /// written to its rows of a Jacobian of shape js (autodiff/jacobian.hpp).
  template <class T, class R>
  tensor<T> jacobian_passes(const tensor<R>& y, const source& src, unconnected_gradients u, std::size_t b,
                            const fg::shape& js, const char* op);

  void check_thread(const char* what) const {
    FG_CHECK(state_.owner == std::this_thread::get_id(), tape_error, "gradient_tape::", what,
             ": a tape belongs to the thread that created it; create one gradient_tape per thread");
  }
  /// check_thread for what only reads the tape (size, watched_variables), which another thread
  /// may also do once the creator has exited: nothing records on the tape any more, and the
  /// creator's exit, published under the link's mutex, orders its writes before the read.
  void check_reader_thread(const char* what) const {
    if (state_.owner == std::this_thread::get_id()) return;
    {
      const std::lock_guard<std::mutex> g(link_->m);
      if (!link_->owner) return;
    }
    check_thread(what);
  }
  /// Warns once per process, however many threads watch integer tensors.
  static void warn_integer_watch() {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true, std::memory_order_relaxed)) {
      std::cerr << "fusegrad: warning: watching an integer tensor; its gradient will always be None "
                   "(undefined). Use a float tensor to get gradients.\n";
    }
  }

  /// Note [recorded gradients]: gradient() on a persistent tape that is recording records its
  /// own backward pass on the tape, which is what makes second derivatives work; called in a
  /// loop that does not need them, it makes the tape grow with every call. The first such call
  /// on each tape warns on std::cerr, as TensorFlow warns about gradient() inside a persistent
  /// tape's context; gradient() under `tape.stop_recording()` records nothing.
  void warn_recorded_gradient() {
    if (std::exchange(state_.warned_recorded_gradient, true)) return;
    std::cerr << "fusegrad: warning: gradient() on a persistent tape that is recording records its own "
                 "backward pass on the tape, which grows with every such call; unless you need "
                 "higher-order gradients, call it under `auto pause = tape.stop_recording();` "
                 "(warned once per tape)\n";
  }

  /// Slot s's gradient as a number when fn may run on numbers: fn has a scalar path, its one
  /// output's gradient is a one-element host value, and no tape tracks what the step reads,
  /// so nothing of it would be recorded (Note [scalar entries]).
  /// `others_record`: some tape on this thread records now.
  std::optional<autodiff::scalar_grad> scalar_upstream(const autodiff::backward_fn& fn,
                                                       const autodiff::grad_store& grads, std::uint32_t s,
                                                       std::span<const std::uint32_t> ins, bool others_record) const {
    using kind = autodiff::grad_store::kind;
    if (!fn.has_scalar_path() || grads.at(s) == kind::none) return std::nullopt;
    if (grads.at(s) == kind::number && !others_record) return grads.number(s);
    std::optional<autodiff::scalar_grad> v;
    tensor_id gid = 0;
    if (grads.at(s) == kind::number) {
      v = grads.number(s);
    } else {
      std::visit(
          [&](const auto& g) {
            using G = std::decay_t<decltype(g)>;
            if constexpr (std::is_same_v<G, tensor<float>> || std::is_same_v<G, tensor<double>>) {
              if (g.size() == 1 && g.device().is_cpu()) {
                v = autodiff::scalar_grad{static_cast<double>(*g.data()), g.dtype(),
                                          static_cast<std::uint8_t>(g.rank())};
                gid = g.id();
              }
            }
          },
          grads.other(s));
    }
    if (!v || !others_record) return v;
    // Some tape records now: the step runs on tensors if one tracks what it reads.
    for (std::uint32_t in : ins) {
      const tensor_id id = state_.slot_ids[in];
      if (autodiff::any_tape_tracks(std::span<const tensor_id>(&id, 1))) return std::nullopt;
    }
    if (gid != 0 && autodiff::any_tape_tracks(std::span<const tensor_id>(&gid, 1))) return std::nullopt;
    return v;
  }

  template <class Y>
  std::vector<result> gradient_impl(const Y& target_expr, std::optional<tensor<value_type_of<Y>>> out_grad,
                                    const std::vector<source>& sources, unconnected_gradients u);

  /// The backward walk from the target (slot of `target`, gradient `seed`) to the sources, in
  /// three passes: reach (which entries lead from a source to the target), walk (run those in
  /// reverse, checking what each returns), collect (the sources' gradients into results).
  void backward(tensor_id target, autodiff::grad_value seed, const std::vector<source>& sources,
                std::vector<result>& results);
  /// Per slot, whether it depends on a source; per entry, whether it reads such a slot.
  void reach(std::span<const std::uint32_t> src_slot, std::span<char> reached, std::span<char> useful) const;
  /// Checks g, returned by `fn` for its input k (slot s), against what slot s's gradient must
  /// be: that of the entry output or the source s is (Note [gradient checks]).
  void check_gradient(const autodiff::backward_fn& fn, std::size_t k, std::uint32_t s, const autodiff::any_grad& g,
                      std::span<const std::uint32_t> src_slot, const std::vector<source>& sources) const;
  /// Throws when g, fn's gradient for its input k, holds NaN or Inf (Note [numerics checks]).
  static void check_numerics_of(const autodiff::backward_fn& fn, std::size_t k, const autodiff::any_grad& g) {
    if (const core::nonfinite f = autodiff::find_nonfinite(g))
      throw value_error(core::cat("fg::debugging: the gradient of '", fn.name(), "' for its input ", k, " (shape ",
                                    autodiff::grad_shape(g), ") holds ", f.words(),
                                    " values (check_numerics)"));
  }

  // The state lives on the heap so that a tape destroyed on another thread can hand it to its
  // creator's stack, which may still point to it (Note [tape stack]).
  std::unique_ptr<autodiff::tape_state> owned_;
  autodiff::tape_state& state_;
  std::shared_ptr<autodiff::tape_stack_link> link_;
};

template <class Y>
std::vector<gradient_tape::result> gradient_tape::gradient_impl(const Y& target_expr,
                                                                std::optional<tensor<value_type_of<Y>>> out_grad,
                                                                const std::vector<source>& sources,
                                                                unconnected_gradients u) {
  using R = value_type_of<Y>;
  check_thread("gradient");
  FG_CHECK(!state_.used || state_.persistent, tape_error,
           "gradient_tape::gradient: GradientTape.gradient can only be called once on non-persistent tapes; "
           "create the tape with fg::gradient_tape tape({.persistent = true}) to call it several times");
  for (const auto& s : sources)
    FG_CHECK(s.type == dtype::float32 || s.type == dtype::float64, value_error,
             "gradient_tape::gradient: sources must be float or double tensors or variables, got a ", name(s.type),
             " source of shape ", s.shape, " (its gradient would always be None)");
  // The target is evaluated as if assigned inside the tape.
  const tensor<R> target = eval(target_expr);
  FG_CHECK(target.defined(), value_error,
           "gradient_tape::gradient: the target is undefined (a moved-from tensor or an unconnected gradient)");
  if (out_grad) {
    FG_CHECK(out_grad->defined() && out_grad->shape() == target.shape(), shape_error,
             "gradient_tape::gradient: output_gradients has shape ",
             out_grad->defined() ? out_grad->shape().str() : std::string("undefined"), " but the target has shape ",
             target.shape(), "; they must match");
  }
  std::vector<result> results(sources.size());
  if constexpr (std::is_floating_point_v<R>) {
    autodiff::grad_value seed;
    if (!out_grad && target.size() == 1 && target.device().is_cpu())
      seed = autodiff::scalar_grad{1.0, dtype_of<R>(), static_cast<std::uint8_t>(target.rank())};
    else
      seed = out_grad ? tensor<R>(*out_grad) : tensor<R>(fg::fill_like(target, R(1)));
    const std::size_t recorded = state_.entries.size();
    backward(target.id(), std::move(seed), sources, results);
    if (state_.persistent && state_.entries.size() > recorded) [[unlikely]]
      warn_recorded_gradient();
  }
  if (!state_.persistent) state_.used = true;
  for (std::size_t s = 0; s < sources.size(); ++s) {
    if (u == unconnected_gradients::zero && std::holds_alternative<std::monostate>(results[s].g)) {
      if (sources[s].type == dtype::float32) results[s].g = fg::zeros<float>(sources[s].shape);
      else results[s].g = fg::zeros<double>(sources[s].shape);
    }
  }
  return results;
}
}  // namespace fusegrad

// The definitions of the backward walk, the constructor and the destructor (Note [separate
// engines]), unless one source file of the program compiles them.
#if !defined(FUSEGRAD_SEPARATE_ENGINES)
#include "tape_walk.hpp"
#endif
