#pragma once
/// \file The program of an expression type and the tables of its ops (Note [programs],
/// expr/program.hpp): what the backward engines run (autodiff/program_backward.hpp). Each
/// table is compiled once per op and operand element types.

#include <initializer_list>
#include <tuple>
#include <utility>

#include "../autodiff/program_backward.hpp"
#include "../autodiff/program_entry.hpp"
#include "../eval/host.hpp"
#include "../expr/gradient.hpp"
#include "../expr/program.hpp"
#include "../ops/binary.hpp"

namespace fusegrad::eager {

template <class Op, class... V> const expr::op_table& table_of();

template <class E> const expr::program& program_of();

template <class E>
expr::rule_program rule_program_of(const E& rule, std::initializer_list<dtype> slot_types);

template <class E, class Out>
void collect_literals(const E& e, Out& out);

/// The rules of Op over operands of element types V, as the functions of its op table.
template <class Op, class... V>
struct op_rules {
  static_assert(std::is_empty_v<Op>, "fusegrad: a program op must be stateless");
  using R = typename Op::template result<V...>;
  static constexpr std::size_t n = sizeof...(V);
  template <std::size_t I> using operand = std::tuple_element_t<I, std::tuple<V...>>;
  using seq = std::index_sequence_for<V...>;

  static void forward(const void* const* args, void* out, std::size_t m) {
    [&]<std::size_t... J>(std::index_sequence<J...>) {
      const expr::node<Op, expr::slot_leaf<V, J>...> e(Op{}, expr::slot_leaf<V, J>{}...);
      host::detail::evaluate_slots(e, m, static_cast<R*>(out), args);
    }(seq{});
  }

  /// The vjp expression of operand I over slot leaves: g in slot 0, the operands after it.
  template <std::size_t I>
  static auto slot_vjp() {
    return [&]<std::size_t... J>(std::index_sequence<J...>) {
      return Op{}.template vjp<I>(expr::slot_leaf<R, 0>{}, expr::slot_leaf<V, J + 1>{}...);
    }(seq{});
  }
  template <std::size_t I>
  static constexpr bool has_vjp() {
    if constexpr (!std::is_floating_point_v<R> || !std::is_floating_point_v<operand<I>>) return false;
    else return !expr::is_zero_grad<decltype(slot_vjp<I>())>::value;
  }

  template <std::size_t I>
  static void vjp(const void* g, const void* const* args, void* out, std::size_t m) {
    const void* slots[n + 1];
    slots[0] = g;
    for (std::size_t j = 0; j < n; ++j) slots[j + 1] = args[j];
    host::detail::evaluate_slots(slot_vjp<I>(), m, static_cast<operand<I>*>(out), slots);
  }

  static core::cell point_forward(const core::cell* a) {
    return [&]<std::size_t... J>(std::index_sequence<J...>) {
      return core::cell::of(static_cast<R>(Op{}(a[J].template as<V>()...)));
    }(seq{});
  }
  template <std::size_t I>
  static core::cell point_vjp(core::cell g, const core::cell* a) {
    return [&]<std::size_t... J>(std::index_sequence<J...>) {
      const auto e = Op{}.template vjp<I>(expr::literal<R>{g.template as<R>()}, expr::literal<V>{a[J].template as<V>()}...);
      return core::cell::of(static_cast<operand<I>>(expr::point_value(e)));
    }(seq{});
  }

#if defined(FUSEGRAD_DEVICE)
  static core::any_tensor device_forward(const core::any_tensor* a) {
    return [&]<std::size_t... J>(std::index_sequence<J...>) -> core::any_tensor {
      return tensor<R>(expr::node<Op, expr::leaf<V>...>(Op{}, expr::leaf<V>{std::get<tensor<V>>(a[J])}...));
    }(seq{});
  }
#endif
  static const expr::program* unit() {
    static const expr::program p = [] {
      expr::program q;
      q.leaves = static_cast<std::uint16_t>(n);
      q.types = {dtype_of<V>()...};
      expr::instr in{&table_of<Op, V...>(), {}};
      for (std::size_t j = 0; j < n; ++j) in.args[j] = static_cast<std::uint16_t>(j);
      q.code.push_back(in);
      q.types.push_back(dtype_of<R>());
      return q;
    }();
    return &p;
  }
  /// Operand I's vjp rule as a program (instantiates the tables of the ops it uses, not their
  /// evaluation over tensors: the engines run it op by op).
  template <std::size_t I>
  static const expr::rule_program* vjp_rule() {
    static const expr::rule_program r = rule_program_of(slot_vjp<I>(), {dtype_of<R>(), dtype_of<V>()...});
    return &r;
  }

  static expr::op_table make() {
    expr::op_table t{};
    t.name = Op::name;
    t.arity = static_cast<std::uint8_t>(n);
    t.result = dtype_of<R>();
    [&]<std::size_t... J>(std::index_sequence<J...>) {
      ((t.args[J] = dtype_of<V>()), ...);
      (set_vjp<J>(t), ...);
    }(seq{});
    t.forward = &forward;
    t.point_forward = &point_forward;
#if defined(FUSEGRAD_DEVICE)
    t.device_forward = &device_forward;
#endif
    t.unit = &unit;
    return t;
  }
  template <std::size_t I>
  static void set_vjp(expr::op_table& t) {
    if constexpr (has_vjp<I>()) {
      t.vjp[I] = &vjp<I>;
      t.point_vjp[I] = &point_vjp<I>;
      t.vjp_rule[I] = &vjp_rule<I>;
    }
  }
};

/// The table of Op over operands of element types V.
template <class Op, class... V>
const expr::op_table& table_of() {
  static const expr::op_table t = op_rules<Op, V...>::make();
  return t;
}

/// Note [shared op tables]: with FUSEGRAD_SEPARATE_ENGINES (Note [separate engines],
/// eager/engines.hpp) the tables a tape uses most, listed here, are compiled once per program,
/// in the engines' source file, and every other unit only declares them: the float32 and
/// float64 forms of every op with a derivative, of the comparisons and where that select
/// between them, and of the casts to a floating type. A table not listed (an op over integers,
/// say) is compiled where it is used, as by default. The same holds, by lists of their own, for
/// the reductions of a float32 or float64 tensor (sum, mean, max, min, logsumexp:
/// eager/reduce.hpp) and for the product of two such tensors (eager/linalg.hpp): each of those
/// instantiates its boundary op's runner, recording and backward, more code than a unit's
/// expressions.

/// One table's explicit instantiation: a declaration when P is `extern`, the definition when P
/// is empty.
#define FG_OP_TABLE(P, Op, ...) P template const expr::op_table& table_of<Op, __VA_ARGS__>();
/// The listed tables of element type T: P is `extern` here, empty in the engines' source file.
#define FG_SHARED_OP_TABLES(P, T)                                                                                \
  FG_OP_TABLE(P, ops::negative_op, T) FG_OP_TABLE(P, ops::abs_op, T) FG_OP_TABLE(P, ops::sign_op, T)             \
  FG_OP_TABLE(P, ops::exp_op, T) FG_OP_TABLE(P, ops::expm1_op, T) FG_OP_TABLE(P, ops::log_op, T)                 \
  FG_OP_TABLE(P, ops::log1p_op, T) FG_OP_TABLE(P, ops::sqrt_op, T) FG_OP_TABLE(P, ops::rsqrt_op, T)              \
  FG_OP_TABLE(P, ops::square_op, T) FG_OP_TABLE(P, ops::reciprocal_op, T) FG_OP_TABLE(P, ops::sin_op, T)         \
  FG_OP_TABLE(P, ops::cos_op, T) FG_OP_TABLE(P, ops::tan_op, T) FG_OP_TABLE(P, ops::tanh_op, T)                  \
  FG_OP_TABLE(P, ops::sigmoid_op, T) FG_OP_TABLE(P, ops::sigmoid_derivative_op, T)                               \
  FG_OP_TABLE(P, ops::softplus_op, T) FG_OP_TABLE(P, ops::relu_op, T) FG_OP_TABLE(P, ops::floor_op, T)           \
  FG_OP_TABLE(P, ops::ceil_op, T) FG_OP_TABLE(P, ops::round_op, T) FG_OP_TABLE(P, ops::add_op, T, T)             \
  FG_OP_TABLE(P, ops::subtract_op, T, T) FG_OP_TABLE(P, ops::multiply_op, T, T)                                  \
  FG_OP_TABLE(P, ops::divide_op, T, T) FG_OP_TABLE(P, ops::floordiv_op, T, T) FG_OP_TABLE(P, ops::mod_op, T, T)  \
  FG_OP_TABLE(P, ops::pow_op, T, T) FG_OP_TABLE(P, ops::maximum_op, T, T) FG_OP_TABLE(P, ops::minimum_op, T, T)  \
  FG_OP_TABLE(P, ops::equal_op, T, T) FG_OP_TABLE(P, ops::not_equal_op, T, T) FG_OP_TABLE(P, ops::less_op, T, T) \
  FG_OP_TABLE(P, ops::less_equal_op, T, T) FG_OP_TABLE(P, ops::greater_op, T, T)                                 \
  FG_OP_TABLE(P, ops::greater_equal_op, T, T) FG_OP_TABLE(P, ops::where_op, bool, T, T)                          \
  FG_OP_TABLE(P, ops::cast_op<T>, bool) FG_OP_TABLE(P, ops::cast_op<T>, std::int32_t)                            \
  FG_OP_TABLE(P, ops::cast_op<T>, std::int64_t) FG_OP_TABLE(P, ops::cast_op<T>, float)                           \
  FG_OP_TABLE(P, ops::cast_op<T>, double)

#if defined(FUSEGRAD_SEPARATE_ENGINES)
FG_SHARED_OP_TABLES(extern, float)
FG_SHARED_OP_TABLES(extern, double)
#endif

/// Appends E's ops to p; returns the slot of its result. A leaf takes the next leaf slot, a
/// slot leaf (in a rule) the leaf slot it names, a literal the next literal slot.
template <class E>
std::uint16_t build_program(expr::program& p, std::uint16_t& leaf, std::uint16_t& lit) {
  using T = typename E::value_type;
  if constexpr (expr::is_slot<E>::value) {
    return static_cast<std::uint16_t>(expr::is_slot<E>::index);
  } else if constexpr (expr::is_leaf<E>::value) {
    p.types[leaf] = dtype_of<T>();
    return leaf++;
  } else if constexpr (expr::is_literal<E>::value) {
    const auto s = static_cast<std::uint16_t>(p.leaves + lit++);
    p.types[s] = dtype_of<T>();
    return s;
  } else {
    return [&]<class Op, class... A>(std::type_identity<expr::node<Op, A...>>) {
      expr::instr in{&table_of<Op, typename A::value_type...>(), {}};
      std::size_t j = 0;
      ((in.args[j++] = build_program<A>(p, leaf, lit)), ...);
      p.code.push_back(in);
      p.types.push_back(dtype_of<T>());
      return static_cast<std::uint16_t>(p.types.size() - 1);
    }(std::type_identity<E>{});
  }
}

/// The program of expression type E (built once).
template <class E>
const expr::program& program_of() {
  static const expr::program p = [] {
    expr::program q;
    q.leaves = static_cast<std::uint16_t>(expr::leaf_count<E>::value);
    q.literals = static_cast<std::uint16_t>(expr::literal_count<E>::value);
    q.types.resize(q.leaves + q.literals);
    std::uint16_t leaf = 0, lit = 0;
    build_program<E>(q, leaf, lit);
    return q;
  }();
  return p;
}

/// The program of a derivative rule over slot leaves whose slots have the types given.
template <class E>
expr::rule_program rule_program_of(const E& rule, std::initializer_list<dtype> slot_types) {
  expr::rule_program r;
  if constexpr (expr::is_slot<E>::value) {
    r.pass = static_cast<int>(expr::is_slot<E>::index);
  } else {
    r.p.leaves = static_cast<std::uint16_t>(slot_types.size());
    collect_literals(rule, r.literals);
    r.p.literals = static_cast<std::uint16_t>(r.literals.size());
    r.p.types.assign(slot_types.begin(), slot_types.end());
    r.p.types.resize(r.p.leaves + r.p.literals);  // the literals' types: build_program's
    std::uint16_t leaf = 0, lit = 0;
    build_program<E>(r.p, leaf, lit);
  }
  return r;
}

/// Appends the literals of e, depth-first, as cells (a rule's slot leaves are not literals).
template <class E, class Out>
void collect_literals(const E& e, Out& out) {
  if constexpr (expr::is_slot<E>::value) return;
  else if constexpr (expr::is_literal<E>::value) out.push_back(core::cell::of(e.value));
  else if constexpr (expression<E>)
    fg::core::apply([&](const auto&... a) { (collect_literals(a, out), ...); }, e.args);
}

/// e evaluated op by op from its program (each op an eager evaluation, recorded).
template <class E>
core::any_tensor run_expression_op_by_op(const E& e) {
  if constexpr (expr::is_leaf<E>::value) {
    return e.value;
  } else {
    core::small_vector<core::any_tensor, 4> leaves;
    expr::for_each_leaf(e, [&](const auto& l) { leaves.push_back(l.value); });
    core::small_vector<core::cell, 2> literals;
    collect_literals(e, literals);
    return autodiff::engines().op_by_op(program_of<E>(), leaves, literals);
  }
}
}  // namespace fusegrad::eager
