#pragma once
/// \file When and how expressions become tensors, and how evaluations are recorded on tapes.
/// Note [evaluation levels]: recording an evaluation instantiates its backward, whose gradient
/// expressions are evaluated and recorded in turn. To keep that type recursion finite, each
/// evaluation carries a level: user code evaluates at level 0, a backward pass at level + 1,
/// fused while the level is at most fused_levels. Beyond it, gradient expressions run op by op
/// (each op a one-node expression over tensors), a finite set of types. So first-order
/// backward passes are fused and higher orders are exact but unfused.

#include <algorithm>
#include <array>
#include <memory>

#include "../autodiff/tape_state.hpp"
#include "../eval/device_hooks.hpp"
#include "../eval/host_reduce.hpp"
#include "gradient.hpp"
#include "kernel.hpp"

namespace fusegrad {
/// A tensor with the same values and a new shape of the same size (-1 infers one dimension).
template <class T> tensor<T> reshape(const tensor<T>& x, const fg::shape& s);

namespace detail {
inline constexpr int fused_levels = 1;

/// The device every leaf of e lives on; throws device_error naming both when they differ.
template <class E>
fg::device common_device(const E& e) {
  fg::device d = default_device();
  bool first = true;
  expr::for_each_leaf(e, [&](const auto& l) {
    const fg::device ld = l.value.device();
    if (first) d = ld;
    FG_CHECK(ld == d, device_error, "fusegrad: operands of one expression live on ", d.str(), " and ", ld.str(),
             "; move one with .gpu() or .cpu() (fusegrad never copies between devices silently)");
    first = false;
  });
  return d;
}

/// Runs a host or device evaluation of e over `out` into dst.
template <class E, class T>
void run_elementwise(const E& e, const fg::shape& out, fg::device d, T* dst) {
  if (d.is_gpu()) return device_eval::evaluate(e, out, d, dst);
  host::evaluate_host(e, out, dst);
}

/// Reduces e, broadcast over `iter`, with reducer R into dst of shape `keep` (iter's rank, 1 on
/// reduced axes), on the host or the device.
template <class R, class E, class T>
void run_reduction(const E& e, const fg::shape& iter, const fg::shape& keep, fg::device d, T* dst) {
  if (d.is_gpu()) return device_eval::reduce<R>(e, iter, keep, d, dst);
  // Not std::vector: its bool specialisation has no data().
  const std::size_t n = keep.elements();
  std::unique_ptr<typename R::acc[]> acc(new typename R::acc[n]);
  std::fill(acc.get(), acc.get() + n, R::identity());
  host::reduce_host<R>(e, iter, keep, acc.get());
  std::copy(acc.get(), acc.get() + n, dst);
}

template <int Level, class E> struct fused_entry;
template <class E> struct scalar_entry;

template <class E>
void record_scalar(const E& e, std::size_t iter_rank, std::size_t g_rank, tensor_id out);

/// Records e (evaluated on device d over `iter`, its upstream gradient reshaped to `gshape`) on
/// the tapes that track one of its floating-point leaves.
/// `derivative`: the saved derivative (Note [saved derivative]), taken by the entry; null when
/// none was saved.
template <int Level, class E>
void record_fused(const E& e, const fg::shape& iter, const fg::shape& gshape, fg::device d, tensor_id out,
                  tensor<typename E::value_type>* derivative = nullptr) {
  constexpr std::size_t L = expr::leaf_count<E>::value;
  if constexpr (L > 0) {
    if constexpr (Level == 0) {
      if (iter.elements() == 1 && d.is_cpu()) return record_scalar(e, iter.rank(), gshape.rank(), out);
    }
    typename fused_entry<Level, E>::input_list inputs;
    id_list ids;
    std::size_t p = 0;
    expr::for_each_leaf(e, [&](const auto& l) {
      using T = typename std::remove_cvref_t<decltype(l)>::value_type;
      if constexpr (std::is_floating_point_v<T>) {
        const tensor_id id = l.value.id();
        std::size_t k = 0;
        while (k < ids.size() && ids[k] != id) ++k;
        if (k == ids.size()) {
          ids.push_back(id);
          inputs.push_back({l.value.shape(), dtype_of<T>(), {}});
        }
        inputs[k].on[p] = true;
      }
      ++p;
    });
    if (ids.empty()) return;
    const tensor_id outs[1] = {out};
    record(std::span<const tensor_id>(ids.data(), ids.size()), outs,
           [&] {
             // From the block cache (Note [buffer cache]): an entry holds its expression's
             // shapes, often a kilobyte, which malloc serves slowly in a loop.
             using F = fused_entry<Level, E>;
             return std::allocate_shared<F>(host_allocator<F>{}, e, iter, gshape, std::move(inputs),
                                            derivative ? std::move(*derivative) : tensor<typename E::value_type>{});
           });
  }
}

/// Note [saved derivative]: a fused backward pass recomputes what its forward pass computed
/// (Note [fused backward]), which costs little for arithmetic and as much as the forward pass
/// again for transcendental functions: sum(log(1 + exp(x)) * sigmoid(x) + x * x) takes three
/// exponentials and a logarithm per element forward, and again backward. So when a user-level
/// host evaluation has a costly op (ops' `costly`: exp, log, sigmoid, tanh...), reads one
/// tensor that a recording tape tracks at every leaf, of the evaluation's own shape, the
/// forward pass also computes the derivative of each element with respect to that tensor (the
/// position gradients for an upstream of 1, summed), in the same loop over the same loads. Both
/// trees are evaluated as alias trees (leaves load from the one buffer, literals read a pool,
/// no tensors or shapes inside), so the copies of a subexpression that the rules make are
/// equal to the compiler, and their costly parts are computed once per element (Note [costly
/// subexpressions] in eval/host.hpp). The entry keeps the derivative (one tensor of the
/// evaluation's shape), and its backward step is then upstream * derivative, one pass of
/// arithmetic, or the derivative itself for an upstream of 1. When a tape records the backward step
/// (higher orders), the saved derivative, a constant to that tape, would be wrong: the step
/// then runs the derivative rules on the expression as before. The vjp rules are linear in the
/// upstream gradient, so both give the same gradient up to rounding.
template <class E> struct has_costly_op : std::false_type {};
template <class Op, class... A>
struct has_costly_op<expr::node<Op, A...>> : std::bool_constant<Op::costly || (has_costly_op<A>::value || ...)> {};

/// The expression of the derivative of S (the tree e stands for: Note [scalar entries]) with
/// respect to the tensor at all its leaves, for upstream gradient `one` (a 1).
template <class S, class E, class One, class T = typename E::value_type>
auto derivative_of(const E& e, const One& one) {
  return position_sum<T>(position_grads_as<S>(e, one));
}

/// Number of literals in e.
template <class E> struct literal_count : std::integral_constant<std::size_t, expr::is_literal<E>::value ? 1 : 0> {};
template <class Op, class... A>
struct literal_count<expr::node<Op, A...>> : std::integral_constant<std::size_t, (literal_count<A>::value + ... + 0)> {};

/// The number of literals in the operands before operand I of an argument tuple.
template <class Args, std::size_t I>
constexpr std::size_t literals_before() {
  return [&]<std::size_t... Q>(std::index_sequence<Q...>) {
    return (std::size_t{0} + ... + literal_count<std::tuple_element_t<Q, Args>>::value);
  }(std::make_index_sequence<I>{});
}

/// The tree e stands for when all its leaves read one buffer: leaves become alias_leaf, and
/// the J-th literal, depth-first, pooled_literal<T, J> with its value in pool[J]. It holds no
/// tensors and no shapes.
template <std::size_t J, class E, class T>
auto alias_tree(const E& e, T* pool) {
  if constexpr (expr::is_literal<E>::value) {
    pool[J] = static_cast<T>(e.value);
    return expr::pooled_literal<typename E::value_type, J>{{e.value}};
  } else if constexpr (expr::is_leaf<E>::value) {
    return expr::alias_leaf<typename E::value_type>{};
  } else {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      using Args = decltype(E::args);
      using N = expr::node<typename E::op_type, decltype(alias_tree<J + literals_before<Args, I>()>(std::get<I>(e.args), pool))...>;
      return N(e.op, alias_tree<J + literals_before<Args, I>()>(std::get<I>(e.args), pool)...);
    }(std::make_index_sequence<std::tuple_size_v<decltype(E::args)>>{});
  }
}
template <class E, class T = typename E::value_type>
using alias_tree_t = decltype(alias_tree<0>(std::declval<const E&>(), static_cast<T*>(nullptr)));

/// True when evaluations of E may save their derivative (Note [saved derivative]). Define
/// FUSEGRAD_NO_SAVED_DERIVATIVE to turn it off: each such expression then compiles faster (it
/// instantiates no combined loop) and its backward passes run the rules.
template <class E>
constexpr bool may_save_derivative() {
  using T = typename E::value_type;
#ifdef FUSEGRAD_NO_SAVED_DERIVATIVE
  if constexpr (true) {
#else
  if constexpr (!std::is_floating_point_v<T> || !has_costly_op<E>::value || !host::detail::use_simd<E>()) {
#endif
    return false;
  } else {
    using PG = decltype(position_grads(std::declval<const E&>(), expr::literal<T>{}));
    constexpr std::size_t n = std::tuple_size_v<PG>;
    if constexpr (count_positions<T, PG>(std::make_index_sequence<n>{}) == 0) return false;
    else return host::detail::use_simd<decltype(derivative_of<E>(std::declval<const alias_tree_t<E>&>(), expr::unit_literal<T>{}))>();
  }
}

/// Evaluates e over `iter` on the host saving its derivative (Note [saved derivative]) when e
/// qualifies: its values into dst, or with dst null their sum into *sum. Returns the
/// derivative, or an undefined tensor when e does not qualify (and then does nothing).
template <class E, class T = typename E::value_type>
tensor<T> evaluate_saving_derivative(const E& e, const fg::shape& iter, T* dst, typename host::sum_reducer<T>::acc* sum) {
  if constexpr (!may_save_derivative<E>()) {
    return {};
  } else {
    const std::size_t n = iter.elements();
    if (n < 2 || !recording()) return {};
    const tensor<T>* x = nullptr;
    bool one = true;
    expr::for_each_leaf(e, [&](const auto& l) {
      one = one && l.value.shape() == iter && (x == nullptr || l.value.id() == x->id());
      x = &l.value;
    });
    if (!one || !x->device().is_cpu()) return {};
    const tensor_id id = x->id();
    if (!any_tape_tracks(std::span<const tensor_id>(&id, 1))) return {};
    tensor<T> d(iter, fg::device::cpu());
    // Literals pooled, so that the copies of e's subexpressions inside the derivative read
    // the same values from the same addresses and are computed once (one slot more than
    // needed, so that the pool is never empty).
    std::array<T, literal_count<E>::value + 1> pool;
    const auto ae = alias_tree<0>(e, pool.data());
    host::evaluate_host_with_derivative(ae, derivative_of<E>(ae, expr::unit_literal<T>{}), iter, x->data(),
                                        pool.data(), dst, sum, d.buffer()->data);
    return d;
  }
}

/// Evaluates e broadcast to `out` at a given level (Note [evaluation levels]).
template <int Level, class E, class T = typename E::value_type>
tensor<T> evaluate_to(const E& e, const fg::shape& out) {
  if constexpr (expr::is_leaf<E>::value)
    if (e.shape() == out) return e.value;
  const fg::device d = common_device(e);
  tensor<T> r(out, d);
  if constexpr (Level == 0 && may_save_derivative<E>()) {
    if (tensor<T> dr = evaluate_saving_derivative(e, out, r.buffer()->data, nullptr); dr.defined()) {
      record_fused<Level>(e, out, out, d, r.id(), &dr);
      return r;
    }
  }
  if (out.elements() == 1 && d.is_cpu()) {
    ++counters().passes;
    *r.buffer()->data = expr::point_value(e);
  } else {
    bool done = false;
    if constexpr (Level >= 1)
      if (d.is_cpu()) done = host::evaluate_host_aliased(e, out, r.buffer()->data);
    if (!done) run_elementwise(e, out, d, r.buffer()->data);
  }
  if constexpr (std::is_floating_point_v<T>)
    if (recording()) record_fused<Level>(e, out, out, d, r.id());
  return r;
}

template <class A>
auto unfused_operand(const A& a) {
  if constexpr (expression<A>) return expr::leaf<typename A::value_type>{evaluate_unfused(a)};
  else return a;
}

/// Evaluates e one op at a time: the op-by-op mode, also used past the fused levels.
template <class E, class T = typename E::value_type>
tensor<T> evaluate_unfused(const E& e) {
  if constexpr (expr::is_leaf<E>::value) {
    return e.value;
  } else {
    auto leafy = fg::detail::apply([](const auto&... a) { return std::make_tuple(unfused_operand(a)...); }, e.args);
    using N = decltype(fg::detail::apply([&](const auto&... a) { return expr::node<typename E::op_type, std::remove_cvref_t<decltype(a)>...>(e.op, a...); }, leafy));
    return evaluate_to<fused_levels>(N(e.op, leafy, e.shape()), e.shape());
  }
}

/// Evaluates e at `Level`: fused up to fused_levels, op by op beyond.
template <int Level, class E>
auto evaluate_level(const E& e) {
  if constexpr (Level <= fused_levels) return evaluate_to<Level>(e, e.shape());
  else return evaluate_unfused(e);
}

/// Mean of e over the axes that `iter` has and `keep` reduces (keep: iter's rank, 1 on the
/// reduced axes): one fused pass over e; the reduced sums are divided by the count as they are
/// written out (as numpy does: sum, then divide). Recorded as the sum of e / count.
template <class E, class T = typename E::value_type>
tensor<T> mean_to(const E& e, const fg::shape& iter, const fg::shape& keep, std::size_t count) {
  const fg::device dev = common_device(e);
  tensor<T> r(keep, dev);
  const T n = static_cast<T>(count);
  if (dev.is_gpu()) {
    device_eval::reduce<host::sum_reducer<T>>(e, iter, keep, dev, r.buffer()->data, n);
  } else {
    using A = typename host::sum_reducer<T>::acc;
    std::vector<A> acc(keep.elements(), A(0));
    host::reduce_host<host::sum_reducer<T>>(e, iter, keep, acc.data());
    for (std::size_t i = 0; i < acc.size(); ++i) r.buffer()->data[i] = static_cast<T>(acc[i]) / n;
  }
  if (recording()) {
    const auto scaled = e / n;
    record_fused<0>(scaled, iter, keep, dev, r.id());
  }
  return r;
}

/// Sum of e, broadcast over `iter`, reduced to `target` (a shape iter broadcasts from): the
/// reduction of a gradient over broadcast axes, and reduce_sum. One fused pass, recorded.
template <int Level, class E, class T = typename E::value_type>
tensor<T> sum_to(const E& e, const fg::shape& iter, const fg::shape& target) {
  if (target == iter) {
    if constexpr (Level <= fused_levels) return evaluate_to<Level>(e, iter);
    else return e.shape() == iter ? evaluate_unfused(e) : evaluate_to<fused_levels>(expr::leaf<T>{evaluate_unfused(e)}, iter);
  }
  if constexpr (Level > fused_levels) {
    return sum_to<fused_levels>(expr::leaf<T>{evaluate_unfused(e)}, iter, target);
  } else {
    fg::shape keep;
    const std::size_t off = iter.rank() - target.rank();
    for (std::size_t d = 0; d < iter.rank(); ++d) keep.push_back(d < off ? 1 : target[d - off]);
    const fg::device dev = common_device(e);
    tensor<T> r(target, dev);
    if constexpr (Level == 0 && may_save_derivative<E>()) {
      if (keep.elements() == 1) {
        typename host::sum_reducer<T>::acc sum(0);
        if (tensor<T> dr = evaluate_saving_derivative(e, iter, static_cast<T*>(nullptr), &sum); dr.defined()) {
          *r.buffer()->data = static_cast<T>(sum);
          record_fused<Level>(e, iter, keep, dev, r.id(), &dr);
          return r;
        }
      }
    }
    run_reduction<host::sum_reducer<T>>(e, iter, keep, dev, r.buffer()->data);
    if constexpr (std::is_floating_point_v<T>)
      if (recording()) record_fused<Level>(e, iter, keep, dev, r.id());
    return r;
  }
}

/// The backward step of a fused evaluation (Note [fused backward]).
template <int Level, class E>
struct fused_entry final : backward_fn {
  static constexpr std::size_t L = expr::leaf_count<E>::value;
  struct input {
    fg::shape shape;
    dtype type;
    std::array<bool, L> on;
  };
  using input_list = small_vector<input, 2>;

  E e;
  fg::shape iter, gshape;
  input_list inputs;
  tensor<typename E::value_type> derivative;  ///< Note [saved derivative]; undefined when not saved

  fused_entry(const E& ex, const fg::shape& it, const fg::shape& gs, input_list in,
              tensor<typename E::value_type> d = {})
      : e(ex), iter(it), gshape(gs), inputs(std::move(in)), derivative(std::move(d)) {}

  const char* name() const noexcept override {
    if constexpr (expression<E>) return E::op_type::name;
    else return "identity";
  }

  void run(std::span<const any_grad> upstream, std::span<const bool> needed, std::span<any_grad> grads) override {
    using R = typename E::value_type;
    const auto* gp = std::get_if<tensor<R>>(&upstream[0]);
    if (!gp) return;
    tensor<R> g = gp->shape() == gshape ? *gp : reshape(*gp, gshape);
    if constexpr (std::is_floating_point_v<R>) {
      // Note [saved derivative]: its one input's gradient is upstream * derivative, unless a
      // tape records this step.
      if (derivative.defined() && !recording()) {
        if (!needed[0]) return;
        // An upstream of exactly 1 (a loss) changes nothing: the derivative is the gradient.
        if (g.size() == 1 && g.device().is_cpu() && *g.data() == R(1)) grads[0] = derivative;
        else grads[0] = sum_to<Level + 1>(expr::leaf<R>{g} * expr::leaf<R>{derivative}, iter, inputs[0].shape);
        return;
      }
    }
    // A fused backward pass marks its upstream gradient (Note [aliased leaves]).
    const auto pg = [&] {
      if constexpr (Level + 1 <= fused_levels) return position_grads(e, expr::node<ops::upstream_op, expr::leaf<R>>(ops::upstream_op{}, expr::leaf<R>{g}));
      else return position_grads(e, expr::leaf<R>{g});
    }();
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      if (!needed[k]) continue;
      if (inputs[k].type == dtype::float32) grads[k] = input_grad<float>(pg, inputs[k]);
      else grads[k] = input_grad<double>(pg, inputs[k]);
    }
  }

 private:
  template <class T, class PG>
  any_grad input_grad(const PG& pg, const input& in) {
    constexpr std::size_t n = std::tuple_size_v<PG>;
    if constexpr (count_positions<T, PG>(std::make_index_sequence<n>{}) == 0) {
      return {};
    } else {
      if (!has_gradient<T, PG>(in.on.data())) return {};
      return sum_to<Level + 1>(gated_sum<T>(pg, in.on.data()), iter, in.shape);
    }
  }
};
/// What a scalar entry keeps of an expression over one element: its ops and values, no
/// tensors and no shapes (Note [scalar entries]).
template <class T> struct thin_leaf {
  T value;
};
template <class Op, class... A> struct thin_node {
  [[no_unique_address]] Op op;
  std::tuple<A...> args;
};
template <class E> struct thin_tree { using type = E; };  // literals stay literals
template <class T> struct thin_tree<expr::leaf<T>> { using type = thin_leaf<T>; };
template <class Op, class... A> struct thin_tree<expr::node<Op, A...>> {
  using type = thin_node<Op, typename thin_tree<A>::type...>;
};

template <class E>
typename thin_tree<E>::type to_thin(const E& e) {
  if constexpr (expr::is_leaf<E>::value) return {*e.value.data()};
  else if constexpr (expr::is_literal<E>::value) return e;
  else return fg::detail::apply([&](const auto&... a) { return typename thin_tree<E>::type{e.op, {to_thin(a)...}}; }, e.args);
}

/// The tree E stands for with every leaf a literal: what run_scalar differentiates.
template <class E> struct literal_tree { using type = E; };
template <class T> struct literal_tree<expr::leaf<T>> { using type = expr::literal<T>; };
template <class Op, class... A> struct literal_tree<expr::node<Op, A...>> {
  using type = expr::node<Op, typename literal_tree<A>::type...>;
};

template <class E, class Thin>
typename literal_tree<E>::type thin_to_literals(const Thin& t) {
  if constexpr (expr::is_leaf<E>::value) {
    return {t.value};
  } else if constexpr (expr::is_literal<E>::value) {
    return t;
  } else {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      using Args = decltype(E::args);
      return typename literal_tree<E>::type(t.op, thin_to_literals<std::tuple_element_t<I, Args>>(std::get<I>(t.args))...);
    }(std::make_index_sequence<std::tuple_size_v<decltype(E::args)>>{});
  }
}

/// E again from its thin tree: each leaf a fresh one-element host tensor with the identity and
/// rank of the tensor that stood there, so that tapes know it (Note [scalar entries]).
template <class E, class Thin>
E thin_to_expr(const Thin& t, const tensor_id* ids, const std::uint8_t* ranks, std::size_t& p) {
  if constexpr (expr::is_leaf<E>::value) {
    using T = typename E::value_type;
    auto st = make_storage<T>(1, fg::device::cpu());
    *st->data = t.value;
    const std::size_t q = p++;
    return E{tensor<T>(std::move(st), ones_shape(ranks[q]), ids[q])};
  } else if constexpr (expr::is_literal<E>::value) {
    return t;
  } else {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      // Braced initialisation evaluates left to right, the order of leaf positions.
      using Args = decltype(E::args);
      Args args{thin_to_expr<std::tuple_element_t<I, Args>>(std::get<I>(t.args), ids, ranks, p)...};
      return std::make_from_tuple<E>(std::tuple_cat(std::make_tuple(t.op), std::move(args)));
    }(std::make_index_sequence<std::tuple_size_v<decltype(E::args)>>{});
  }
}

/// Note [scalar entries]: scalar code (the Collatz and line-search loops) records one op per
/// statement on one-element tensors, where a fused entry's copies of tensors and shapes cost
/// more than the arithmetic. A user-level evaluation over one element on the host records a
/// scalar_entry instead: the expression's ops and values (thin_tree), and its leaves' ids and
/// ranks. When gradient() runs it and no tape would record the step, run_scalar computes each
/// input's gradient as a number, from the same vjp rules (position_grads over the expression
/// with literals for leaves), and gradient() passes numbers (scalar_grad) between such entries
/// without making tensors. When a tape would record the step (a persistent tape
/// differentiating its own gradient, nested tapes), run() rebuilds the expression with tensors
/// bearing the original ids and runs it as a fused entry, so higher orders get exactly what a
/// fused entry gives them.
/// Where a one-element expression's inputs stand: per leaf position its id, rank and input
/// index; per distinct floating-point input (in order of first position) its dtype and rank.
template <std::size_t L>
struct scalar_layout {
  static constexpr std::uint8_t no_input = 0xff;
  std::array<tensor_id, L> ids{};
  std::array<std::uint8_t, L> ranks{};
  std::array<std::uint8_t, L> input_of{};  ///< per position: its input's index, or no_input
  std::array<dtype, L> types{};
  std::array<std::uint8_t, L> input_ranks{};
  std::uint8_t n_inputs = 0, iter_rank = 0, g_rank = 0;

  /// Lays out e's leaves; writes the distinct inputs' ids (n_inputs of them) to input_ids.
  template <class E>
  scalar_layout(const E& e, std::size_t ir, std::size_t gr, std::array<tensor_id, L>& input_ids)
      : iter_rank(static_cast<std::uint8_t>(ir)), g_rank(static_cast<std::uint8_t>(gr)) {
    std::size_t p = 0;
    expr::for_each_leaf(e, [&](const auto& l) {
      using T = typename std::remove_cvref_t<decltype(l)>::value_type;
      ids[p] = l.value.id();
      ranks[p] = static_cast<std::uint8_t>(l.value.rank());
      input_of[p] = no_input;
      if constexpr (std::is_floating_point_v<T>) {
        std::uint8_t k = 0;
        while (k < n_inputs && input_ids[k] != ids[p]) ++k;
        if (k == n_inputs) {
          input_ids[k] = ids[p];
          types[k] = dtype_of<T>();
          input_ranks[k] = ranks[p];
          ++n_inputs;
        }
        input_of[p] = k;
      }
      ++p;
    });
  }
};

template <class E>
struct scalar_entry final : backward_fn {
  static constexpr std::size_t L = expr::leaf_count<E>::value;
  // Entries live in the entry arena, which never runs their destructors (Note [entry arena]).
  static_assert(std::is_trivially_destructible_v<typename thin_tree<E>::type>);
  using input_list = typename fused_entry<0, E>::input_list;

  typename thin_tree<E>::type e;
  scalar_layout<L> at;

  scalar_entry(const E& ex, const scalar_layout<L>& layout) : e(to_thin(ex)), at(layout) {}

  const char* name() const noexcept override {
    if constexpr (expression<E>) return E::op_type::name;
    else return "identity";
  }
  bool has_scalar_path() const noexcept override { return true; }

  void run_scalar(const scalar_grad& up, std::span<const bool> needed,
                  std::span<std::optional<scalar_grad>> grads) override {
    using R = typename E::value_type;
    const auto pg = position_grads_as<E>(thin_to_literals<E>(e), expr::literal<R>{static_cast<R>(up.value)});
    for (std::size_t k = 0; k < at.n_inputs; ++k) {
      if (!needed[k]) continue;
      if (at.types[k] == dtype::float32) grads[k] = input_grad<float>(pg, k);
      else grads[k] = input_grad<double>(pg, k);
    }
  }

  void run(std::span<const any_grad> upstream, std::span<const bool> needed, std::span<any_grad> grads) override {
    std::size_t p = 0;
    input_list in;
    for (std::size_t k = 0; k < at.n_inputs; ++k) in.push_back({ones_shape(at.input_ranks[k]), at.types[k], on_flags(k)});
    fused_entry<0, E> full(thin_to_expr<E>(e, at.ids.data(), at.ranks.data(), p), ones_shape(at.iter_rank),
                           ones_shape(at.g_rank), std::move(in));
    full.run(upstream, needed, grads);
  }

 private:
  std::array<bool, L> on_flags(std::size_t k) const {
    std::array<bool, L> on{};
    for (std::size_t q = 0; q < L; ++q) on[q] = at.input_of[q] == k;
    return on;
  }
  template <class T, class PG>
  std::optional<scalar_grad> input_grad(const PG& pg, std::size_t k) {
    constexpr std::size_t n = std::tuple_size_v<PG>;
    if constexpr (count_positions<T, PG>(std::make_index_sequence<n>{}) == 0) {
      return std::nullopt;
    } else {
      const std::array<bool, L> on = on_flags(k);
      if (!has_gradient<T, PG>(on.data())) return std::nullopt;
      const T v = expr::point_value(gated_sum<T>(pg, on.data()));
      return scalar_grad{static_cast<double>(v), dtype_of<T>(), at.input_ranks[k]};
    }
  }
};
/// Records a one-element host evaluation as a scalar entry (Note [scalar entries]).
template <class E>
void record_scalar(const E& e, std::size_t iter_rank, std::size_t g_rank, tensor_id out) {
  constexpr std::size_t L = expr::leaf_count<E>::value;
  std::array<tensor_id, L> input_ids;
  const scalar_layout<L> layout(e, iter_rank, g_rank, input_ids);
  if (layout.n_inputs == 0) return;
  const tensor_id outs[1] = {out};
  record(std::span<const tensor_id>(input_ids.data(), layout.n_inputs), outs,
         [&] { return make_arena_entry<scalar_entry<E>>(e, layout); });
}
}  // namespace detail

template <class T>
template <expression E>
tensor<T>::tensor(const E& e) {
  static_assert(std::same_as<typename E::value_type, T>,
                "fg::tensor<T>: the expression's element type is not T; convert with fg::cast<T>(expr)");
  *this = detail::evaluate_to<0>(e, e.shape());
}

/// Evaluates an expression now (tensors are returned as they are, variables read).
template <tensor_like X>
tensor<value_type_of<X>> eval(const X& x) {
  if constexpr (expr::is_leaf<X>::value) return x.value;
  else if constexpr (expr::is_literal<X>::value) return tensor<value_type_of<X>>(x.value);
  else return tensor<value_type_of<X>>(x);
}
}  // namespace fusegrad
