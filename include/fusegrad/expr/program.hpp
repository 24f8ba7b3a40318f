#pragma once
/// \file The run-time description of an expression: its ops in evaluation order over numbered
/// slots, each op known through a table of functions compiled once per op and operand types.
/// Note [programs]: an expression type compiles its forward loops (and, for a loss, the loop of
/// its value and derivative: Note [saved derivative]); everything else an expression may need
/// later (its backward step, the scalar path, op-by-op evaluation, higher orders, device
/// replays) runs from its program: the leaves are numbered depth-first (positions, as in Note
/// [fused backward]), then the literals, then the results of the ops in post-order. Each op's
/// table holds its forward rule and its derivative rules as functions over blocks of elements
/// and over single elements, and each derivative rule as a program of its own (a rule_program,
/// run op by op over tensors), so the code behind a program is instantiated once per op and
/// element types, not once per expression, and a rule costs no code of its own over tensors.
/// The program itself is worked out at compile time as constants (instr_desc) and made by
/// make_program, so an expression or rule adds data, not code, for it.

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "../core/any_tensor.hpp"

namespace fusegrad::inline expr {

/// The largest number of operands an elementwise op takes (where).
inline constexpr std::size_t max_arity = 3;

struct program;
struct rule_program;

/// What a program knows of one op applied to operands of given element types (Note [programs]).
/// A null vjp entry: that operand gets no gradient (integer operands, comparisons, floor...).
struct op_table {
  const char* name;
  std::uint8_t arity;
  dtype result;
  std::array<dtype, max_arity> args;
  /// out[i] = op(args[0][i], ...) for i < n, host memory.
  void (*forward)(const void* const* args, void* out, std::size_t n);
  /// out[i] = the vector-Jacobian product for operand j at upstream g[i].
  std::array<void (*)(const void* g, const void* const* args, void* out, std::size_t n), max_arity> vjp;
  /// The op on one element.
  core::cell (*point_forward)(const core::cell* args);
  /// The vector-Jacobian product for operand j on one element.
  std::array<core::cell (*)(core::cell g, const core::cell* args), max_arity> point_vjp;
  /// The op on device tensors, evaluated (and recorded) as an eager op; null without the device backend.
  core::any_tensor (*device_forward)(const core::any_tensor* args);
  /// The vector-Jacobian product for operand j as a program (built on first use), which the
  /// engines run op by op over tensors, recorded (higher orders, device replays).
  std::array<const rule_program* (*)(), max_arity> vjp_rule;
  /// Where the program of this op alone is kept once made (unit_program).
  std::atomic<const program*>* unit;
};

/// One op of a program: its table and the slots of its operands.
struct instr {
  const op_table* op;
  std::array<std::uint16_t, max_arity> args;
};

/// An expression as ops over slots: leaf positions [0, leaves), literals [leaves, leaves +
/// literals), then one slot per instruction, the last being the result. A program without
/// instructions is one leaf (an identity).
struct program {
  std::uint16_t leaves = 0, literals = 0;
  std::vector<instr> code;
  std::vector<dtype> types;  ///< per slot
  std::size_t slots() const noexcept { return types.size(); }
  std::uint16_t result() const noexcept { return static_cast<std::uint16_t>(slots() - 1); }
  std::uint16_t first_instr() const noexcept { return static_cast<std::uint16_t>(leaves + literals); }
  /// The name of its last op, what errors and tape entries call it ("identity" for no op).
  const char* name() const noexcept { return code.empty() ? "identity" : code.back().op->name; }
};

/// One op of a program as a constant: the function that returns its table, and the slots of
/// its operands. An expression type's program is worked out at compile time as an array of
/// these (eager/program_of.hpp) and turned into a program by make_program, compiled once, so
/// that an expression or rule costs constant data rather than code of its own.
struct instr_desc {
  const op_table& (*table)();
  std::array<std::uint16_t, max_arity> args;
};

/// The program of `leaves` leaves and `literals` literals whose ops are `code` and whose slots
/// have the types `types` (leaves, literals, then one per op).
FG_NOINLINE inline program make_program(std::uint16_t leaves, std::uint16_t literals, const instr_desc* code,
                                        std::size_t n, const dtype* types, std::size_t slots) {
  program p;
  p.leaves = leaves;
  p.literals = literals;
  p.code.reserve(n);
  for (std::size_t k = 0; k < n; ++k) p.code.push_back({&code[k].table(), code[k].args});
  p.types.assign(types, types + slots);
  return p;
}

/// The program of op t alone over leaves 0 .. arity - 1, made on first use and kept for the
/// program's lifetime: data per op and operand types, code compiled once.
FG_NOINLINE inline const program& unit_program(const op_table& t) {
  if (const program* p = t.unit->load(std::memory_order_acquire)) return *p;
  auto made = std::make_unique<program>();
  made->leaves = t.arity;
  instr in{&t, {}};
  for (std::uint16_t j = 0; j < t.arity; ++j) in.args[j] = j;
  made->code.push_back(in);
  made->types.assign(t.args.begin(), t.args.begin() + t.arity);
  made->types.push_back(t.result);
  const program* expected = nullptr;
  if (t.unit->compare_exchange_strong(expected, made.get(), std::memory_order_acq_rel)) return *made.release();
  return *expected;  // another thread made it first
}

/// A derivative rule as a program over slots: leaf 0 the upstream gradient, leaves 1 .. arity
/// the operands, then its literals, whose values it keeps. `pass`: the leaf the rule returns as
/// it is when the rule is a bare operand (add's is g), or -1.
struct rule_program {
  program p;
  std::vector<core::cell> literals;
  int pass = -1;
};

/// A rule program, made by code compiled once and kept for the program's lifetime (each rule's
/// function keeps it in a static): with pass >= 0 the rule that returns leaf `pass` as it is,
/// else the program of make_program's arguments, with its literals' values in `lits`.
FG_NOINLINE inline const rule_program* make_rule(int pass, std::uint16_t leaves, std::uint16_t literals,
                                                 const instr_desc* code, std::size_t n, const dtype* types,
                                                 std::size_t slots, const core::cell* lits) {
  auto* r = new rule_program;
  r->pass = pass;
  if (pass < 0) {
    r->p = make_program(leaves, literals, code, n, types, slots);
    r->literals.assign(lits, lits + literals);
  }
  return r;
}
}  // namespace fusegrad::expr
