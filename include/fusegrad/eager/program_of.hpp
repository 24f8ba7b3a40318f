#pragma once
/// \file The program of an expression type and the tables of its ops (Note [programs],
/// expr/program.hpp): what the backward engines run (autodiff/program_backward.hpp). Each
/// table is compiled once per op and operand element types.

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

template <class E, class... Slot>
const expr::rule_program* rule_program_of(const E& rule);

template <class E, class Out>
void collect_literals(const E& e, Out& out);

/// Number of ops in expression E.
template <class E> struct op_count : std::integral_constant<std::size_t, 0> {};
template <class Op, class... A>
struct op_count<expr::node<Op, A...>> : std::integral_constant<std::size_t, (1 + ... + op_count<A>::value)> {};
/// Number of literals in E that are not a rule's slot leaves.
template <class E>
struct value_literal_count
    : std::integral_constant<std::size_t, expr::is_literal<E>::value && !expr::is_slot<E>::value ? 1 : 0> {};
template <class Op, class... A>
struct value_literal_count<expr::node<Op, A...>>
    : std::integral_constant<std::size_t, (0 + ... + value_literal_count<A>::value)> {};

/// A program as constants (Note [programs], expr/program.hpp): N ops over S slots, made into a
/// program by code compiled once (expr::make_program).
template <std::size_t N, std::size_t S>
struct program_desc {
  std::uint16_t leaves = 0, literals = 0;
  std::array<expr::instr_desc, (N > 0 ? N : 1)> code{};
  std::array<dtype, S> types{};
  expr::program make() const { return expr::make_program(leaves, literals, code.data(), N, types.data(), S); }
};

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

  /// The rules on one element: the scalar path of the block loops' kernels over slots that
  /// point at the cells, so that they share those loops' instantiations.
  static core::cell point_forward(const core::cell* a) {
    const void* slots[n];
    for (std::size_t j = 0; j < n; ++j) slots[j] = a[j].bytes;
    const auto k = [&]<std::size_t... J>(std::index_sequence<J...>) {
      return expr::make_kernel(expr::node<Op, expr::slot_leaf<V, J>...>(Op{}, expr::slot_leaf<V, J>{}...), fg::shape{});
    }(seq{});
    return core::cell::of(static_cast<R>(k.eval(expr::flat_access{0, nullptr, nullptr, slots})));
  }
  template <std::size_t I>
  static core::cell point_vjp(core::cell g, const core::cell* a) {
    const void* slots[n + 1];
    slots[0] = g.bytes;
    for (std::size_t j = 0; j < n; ++j) slots[j + 1] = a[j].bytes;
    const auto k = expr::make_kernel(slot_vjp<I>(), fg::shape{});
    return core::cell::of(static_cast<operand<I>>(k.eval(expr::flat_access{0, nullptr, nullptr, slots})));
  }

#if defined(FUSEGRAD_DEVICE)
  static core::any_tensor device_forward(const core::any_tensor* a) {
    return [&]<std::size_t... J>(std::index_sequence<J...>) -> core::any_tensor {
      return tensor<R>(expr::node<Op, expr::leaf<V>...>(Op{}, expr::leaf<V>{std::get<tensor<V>>(a[J])}...));
    }(seq{});
  }
#endif
  /// Where the program of this op alone is kept (expr::unit_program).
  static inline std::atomic<const expr::program*> unit_slot{nullptr};
  /// Operand I's vjp rule as a program (instantiates the tables of the ops it uses, not their
  /// evaluation over tensors: the engines run it op by op).
  template <std::size_t I>
  static const expr::rule_program* vjp_rule() {
    static const expr::rule_program* const r = rule_program_of<decltype(slot_vjp<I>()), R, V...>(slot_vjp<I>());
    return r;
  }

  static constexpr expr::op_table make() {
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
    t.unit = &unit_slot;
    return t;
  }
  template <std::size_t I>
  static constexpr void set_vjp(expr::op_table& t) {
    if constexpr (has_vjp<I>()) {
      t.vjp[I] = &vjp<I>;
      t.point_vjp[I] = &point_vjp<I>;
      t.vjp_rule[I] = &vjp_rule<I>;
    }
  }
};

/// The table of Op over operands of element types V: a constant, so making it runs no code.
template <class Op, class... V>
const expr::op_table& table_of() {
  static constexpr expr::op_table t = op_rules<Op, V...>::make();
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
  FG_OP_TABLE(P, ops::erf_op, T) FG_OP_TABLE(P, ops::erfc_op, T)                                                 \
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

/// Describes E's ops into d, at compile time; returns the slot of E's result. A leaf takes the
/// next leaf slot, a slot leaf (in a rule) the leaf slot it names, a literal the next literal
/// slot, an op the next op slot.
template <class E, class D>
constexpr std::uint16_t describe(D& d, std::uint16_t& leaf, std::uint16_t& lit, std::uint16_t& k) {
  using T = typename E::value_type;
  if constexpr (expr::is_slot<E>::value) {
    return static_cast<std::uint16_t>(expr::is_slot<E>::index);
  } else if constexpr (expr::is_leaf<E>::value) {
    d.types[leaf] = dtype_of<T>();
    return leaf++;
  } else if constexpr (expr::is_literal<E>::value) {
    const auto s = static_cast<std::uint16_t>(d.leaves + lit++);
    d.types[s] = dtype_of<T>();
    return s;
  } else {
    return [&]<class Op, class... A>(std::type_identity<expr::node<Op, A...>>) {
      expr::instr_desc in{&table_of<Op, typename A::value_type...>, {}};
      std::size_t j = 0;
      ((in.args[j++] = describe<A>(d, leaf, lit, k)), ...);
      const auto s = static_cast<std::uint16_t>(d.leaves + d.literals + k);
      d.code[k++] = in;
      d.types[s] = dtype_of<T>();
      return s;
    }(std::type_identity<E>{});
  }
}

/// The description of E's program over `Leaves` leaves and `Literals` literals. Slot: the
/// element types of a rule's slot leaves (an expression's leaves give their own).
template <class E, std::size_t Leaves, std::size_t Literals, class... Slot>
constexpr auto describe_program() {
  constexpr std::size_t N = op_count<E>::value;
  program_desc<N, Leaves + Literals + N> d;
  d.leaves = static_cast<std::uint16_t>(Leaves);
  d.literals = static_cast<std::uint16_t>(Literals);
  [[maybe_unused]] std::size_t q = 0;
  ((d.types[q++] = dtype_of<Slot>()), ...);
  std::uint16_t leaf = 0, lit = 0, k = 0;
  describe<E>(d, leaf, lit, k);
  return d;
}
template <class E>
inline constexpr auto program_desc_of =
    describe_program<E, expr::leaf_count<E>::value, expr::literal_count<E>::value>();

/// The program of expression type E (built once).
template <class E>
const expr::program& program_of() {
  static const expr::program p = program_desc_of<E>.make();
  return p;
}

/// Where collect_literals writes an expression's literals: an array of the right size.
struct cell_sink {
  core::cell* out;
  std::size_t n = 0;
  void push_back(const core::cell& c) { out[n++] = c; }
};

/// The program of a derivative rule of type E over slot leaves of element types Slot... (made
/// by expr::make_rule; the caller keeps it).
template <class E, class... Slot>
const expr::rule_program* rule_program_of(const E& rule) {
  if constexpr (expr::is_slot<E>::value) {
    return expr::make_rule(static_cast<int>(expr::is_slot<E>::index), 0, 0, nullptr, 0, nullptr, 0, nullptr);
  } else {
    constexpr std::size_t C = value_literal_count<E>::value, N = op_count<E>::value;
    static constexpr auto d = describe_program<E, sizeof...(Slot), C, Slot...>();
    std::array<core::cell, (C > 0 ? C : 1)> lits;
    cell_sink sink{lits.data()};
    collect_literals(rule, sink);
    return expr::make_rule(-1, d.leaves, d.literals, d.code.data(), N, d.types.data(), d.types.size(), lits.data());
  }
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
