#pragma once
/// \file How every eager op ends: eager::epilogue.
/// Note [eager epilogue]: every eager op that makes a floating-point result (a fused evaluation
/// or sum, a reduction, a boundary op, softmax, a cross-entropy, reshape, check_numerics) ends in
/// eager::epilogue, which does, in this order:
/// 1. the numerics check (Note [numerics checks]), when enable_check_numerics is on: when the
///    result holds NaN or Inf, `report(result, f)` throws the op's error (f says which), so a
///    result that fails the check is never recorded;
/// 2. the recording, `record(result)`, when a tape on this thread records (autodiff::recording()).
/// An integer or boolean result does neither. The named form is the epilogue of an op recorded
/// as one autodiff::record_op entry: its error names the op, its operands' shapes and the
/// result's shape. Each op says what it reports and records; the order, the switches and the
/// types that take part are decided here, once. (The backward engines' type-erased services,
/// eager/evaluate.hpp, record their elementwise ops and reshapes unchecked: gradient() checks
/// what each backward step returns.)

#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <type_traits>

#include "../autodiff/record_op.hpp"
#include "../core/any_tensor.hpp"
#include "../core/numerics.hpp"

namespace fusegrad::eager {

/// Whether a result of type Result can hold NaN (a type-erased result is looked at when it is
/// made: core::find_nonfinite finds nothing in an integer one, and its callers record only
/// floating-point ones).
template <class Result>
inline constexpr bool floating_result = true;
template <class T>
inline constexpr bool floating_result<tensor<T>> = std::is_floating_point_v<T>;

/// The epilogue of Note [eager epilogue]. `report(r, f)` throws; `record(r)` records the op.
/// Both take the result, so that a generic lambda's body, which only a floating-point result
/// instantiates, may name what an integer result could not compile (a comparison's fused entry).
template <class Result, class Report, class Record>
void epilogue(const Result& r, Report&& report, Record&& record) {
  if constexpr (floating_result<Result>) {
    if (core::checking_numerics()) [[unlikely]]
      if (const core::nonfinite f = core::find_nonfinite(r)) report(r, f);
    if (autodiff::recording()) record(r);
  }
}

/// The error of the named form: op `name` made NaN or Inf (f) from operands of the given shapes.
template <class Shapes>
[[noreturn]] void report_op(const char* name, core::nonfinite f, const Shapes& operands, const fg::shape& out) {
  std::string shapes;
  for (const fg::shape& s : operands) shapes += (shapes.empty() ? "" : ", ") + s.str();
  throw value_error(core::cat("fg::debugging: '", name, "' produced ", f.words(), " values from operands of shape ",
                              shapes, " (in a result of shape ", out, "; check_numerics)"));
}

/// The epilogue of op `name`, whose result y was made from operands of shapes `operands` and is
/// recorded as one entry over `inputs` with `backward` (autodiff::record_op).
template <class T, class Shapes, class Backward>
void epilogue(const char* name, const tensor<T>& y, const Shapes& operands, std::span<const tensor_id> inputs,
              Backward&& backward) {
  epilogue(
      y, [&](const tensor<T>&, core::nonfinite f) { report_op(name, f, operands, y.shape()); },
      [&](const tensor<T>&) { autodiff::record_op<T>(name, inputs, y, std::forward<Backward>(backward)); });
}
/// The operands' shapes of the named form, listed in braces without copies.
using shape_refs = std::initializer_list<std::reference_wrapper<const fg::shape>>;
/// The named epilogue for operands and inputs listed in braces.
template <class T, class Backward>
void epilogue(const char* name, const tensor<T>& y, shape_refs operands,
              std::initializer_list<tensor_id> inputs, Backward&& backward) {
  epilogue(name, y, operands, std::span<const tensor_id>(inputs.begin(), inputs.size()),
           std::forward<Backward>(backward));
}
}  // namespace fusegrad::eager
