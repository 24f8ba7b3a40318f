#pragma once
/// \file (Used with <fusegrad/eager/boundary.hpp>, which defines what this declares.) The entry
/// point through which a boundary op's rules (ops/shape_rules.hpp, ops/indexing_rules.hpp,
/// ops/scan_rules.hpp) run another boundary op in their backward: ops::run_boundary, the
/// runner of Note [boundary ops].

#include <vector>

#include "common.hpp"

namespace fusegrad::ops {
/// Runs the boundary op that `rule` describes on operands xs (each evaluated first) and returns
/// its result of element type R, recorded on the tapes that watch its differentiable operands.
template <class R, class Rule, tensor_like... X>
tensor<R> run_boundary(Rule rule, const X&... xs);
/// run_boundary for an op with a run-time number of operands of one type (concat).
template <class R, class Rule, class T>
tensor<R> run_boundary(Rule rule, const std::vector<tensor<T>>& xs);
}  // namespace fusegrad::ops
