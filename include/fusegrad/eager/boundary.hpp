#pragma once
/// \file The boundary-op runner, ops::run_boundary: every op that is not elementwise and not a
/// reduction (transpose, tile, broadcast_to, concat, slicing, gather, one_hot, the scans, matmul,
/// argmax, argmin, conv2d and the pools) runs through it from a small rules struct.
/// Note [boundary ops]: a boundary op is written as one rules struct (ops/shape_rules.hpp,
/// ops/indexing_rules.hpp, ops/scan_rules.hpp, ops/linalg_rules.hpp, ops/conv_rules.hpp,
/// ops/pool_rules.hpp) and a public function that
/// builds it and calls
/// ops::run_boundary<R>(rule, operands...). The runner, and nothing else, does the work
/// every such op shares, in this order:
/// 1. evaluates each operand (fg::eval) and throws value_error "fg::<name>: an operand is
///    undefined" for an undefined one;
/// 2. throws device_error naming the op and both devices unless all operands live on one device;
/// 3. asks `rule.shape(operand shapes...)` for the result's shape: the rule checks the shapes
///    and its parameters with its own messages and keeps what its kernels and backward need;
/// 4. when the rule has `forwards_operand()` and it says so, returns the first operand under a
///    new identity (a recorded reshape, no copy);
/// 5. allocates the result and runs the rule's kernel: when the rule asks for a batch of matrix
///    products (`rule.product()`, an ops::gemm_request), dispatch::run_gemm runs them where the
///    operands live; else `rule.device(out, operands...)` on the operands' device when the rule
///    has a device kernel and that device is a GPU; otherwise `rule.host(out, operands...)` over
///    host copies, the result moved back to the operands' device;
/// 6. for a floating R, records one tape entry whose inputs are the first
///    `Rule::differentiable` operands (all by default; 0 records nothing) and whose backward is
///    `rule.backward(g, needed)`, or `rule.backward(g, needed, s)` where the rule keeps
///    `s = rule.saved(result, operands...)` (only what its backward reads). A backward is written
///    with fusegrad's public functions, called unqualified so the rules header need not include
///    this floor, so it is recorded in turn and gives gradients of every order.
/// The rules members: `name` (a string literal: messages and the tape name the op by it),
/// `shape`, `host` (or `product`), `backward` (unless it differentiates nothing); optionally
/// `differentiable`, `saved`, `device`, `forwards_operand`. A run-time list of operands of one type (concat) is passed as a
/// `std::vector<tensor<T>>`; its rules take a vector of shapes and a vector of host operands and
/// return a vector of gradients (a host kernel only, nothing saved). A new op is one rules struct and its test: the
/// evaluators and the tape do not change; a new kind of kernel with host and device implementations adds a request
/// and its dispatch in eval/ (conv2d's ops::run_conv, eval/conv.hpp), which the rule's kernels call.

#include <array>
#include <cstddef>
#include <span>
#include <tuple>
#include <type_traits>
#include <vector>

#include "../autodiff/record_op.hpp"
#include "../eval/linalg.hpp"
#include "../ops/boundary.hpp"
#include "evaluate.hpp"
#include "reshape.hpp"

namespace fusegrad::eager {
namespace boundary {
inline void check_defined(bool defined, const char* op) {
  FG_CHECK(defined, value_error, "fg::", op, ": an operand is undefined (an unconnected gradient?)");
}

/// What a rules struct has (Note [boundary ops]); named concepts rather than requires-expressions
/// inside `if constexpr`, which nvcc's front end does not always evaluate over a parameter pack.
template <class Rule>
concept forwards_operands = requires(const Rule& r) { r.forwards_operand(); };
template <class Rule, class R, class... T>
concept has_device_kernel = requires(const Rule& r, R* p, const tensor<T>&... x) { r.device(p, x...); };
template <class Rule>
concept asks_product = requires(const Rule& r) { r.product(); };
template <class Rule, class R, class... T>
concept keeps_saved = requires(const Rule& r, const tensor<R>& y, const tensor<T>&... x) { r.saved(y, x...); };

/// How many leading operands a rule differentiates (Note [boundary ops], step 6).
template <class Rule>
constexpr std::size_t differentiable(std::size_t operands) {
  if constexpr (requires { Rule::differentiable; }) return Rule::differentiable;
  else return operands;
}

/// Steps 1 to 6 of Note [boundary ops] on evaluated operands.
template <class R, class Rule, class... T>
tensor<R> run(Rule rule, const tensor<T>&... xs) {
  (check_defined(xs.defined(), rule.name), ...);
  const fg::device d = std::get<0>(std::tie(xs...)).device();
  (dispatch::check_same_device(rule.name, d, xs.device()), ...);
  const fg::shape out = rule.shape(xs.shape()...);
  if constexpr (forwards_operands<Rule>)
    if (rule.forwards_operand()) return reshape(std::get<0>(std::tie(xs...)), out);
  tensor<R> y;
  if constexpr (asks_product<Rule>) {
    static_assert(sizeof...(T) == 2, "fusegrad: a rule that asks for a product takes two operands");
    const auto& [a, b] = std::tie(xs...);
    y = tensor<R>(out, d, rule.name);
    dispatch::run_gemm<R>(rule.product(), a.data(), b.data(), y.buffer()->data, d);
  } else {
    if constexpr (has_device_kernel<Rule, R, T...>)
      if (d.is_gpu()) {
        y = tensor<R>(out, d, rule.name);
        rule.device(y.buffer()->data, xs...);
      }
    if (!y.defined()) {
      tensor<R> h(out, fg::device::cpu(), rule.name);
      rule.host(h.buffer()->data, dispatch::host_operand(xs, rule.name)...);
      y = h.to(d);
    }
  }
  if constexpr (std::is_floating_point_v<R>)
    if (core::checking_numerics()) [[unlikely]]  // Note [numerics checks]
      core::check_result(rule.name, y, {xs.shape()...});
  constexpr std::size_t n = differentiable<Rule>(sizeof...(T));
  if constexpr (std::is_floating_point_v<R> && n > 0) {
    if (autodiff::recording()) {
      const std::array<tensor_id, sizeof...(T)> all{xs.id()...};
      std::array<tensor_id, n> ids;
      for (std::size_t i = 0; i < n; ++i) ids[i] = all[i];
      if constexpr (keeps_saved<Rule, R, T...>)
        autodiff::record_op<R, n>(rule.name, ids, y,
                                  [rule, s = rule.saved(y, xs...)](const tensor<R>& g, std::span<const bool> need) {
                                    return rule.backward(g, need, s);
                                  });
      else
        autodiff::record_op<R, n>(rule.name, ids, y,
                                  [rule](const tensor<R>& g, std::span<const bool> need) { return rule.backward(g, need); });
    }
  }
  return y;
}
}  // namespace boundary
}  // namespace fusegrad::eager

// The runner declared by ops/boundary.hpp.
namespace fusegrad::ops {

template <class R, class Rule, tensor_like... X>
tensor<R> run_boundary(Rule rule, const X&... xs) {
  return eager::boundary::run<R>(std::move(rule), eval(xs)...);
}

template <class R, class Rule, class T>
tensor<R> run_boundary(Rule rule, const std::vector<tensor<T>>& xs) {
  std::vector<fg::shape> shapes;
  std::vector<tensor<T>> hs;
  for (const auto& x : xs) {
    eager::boundary::check_defined(x.defined(), rule.name);
    dispatch::check_same_device(rule.name, xs[0].device(), x.device());
    shapes.push_back(x.shape());
  }
  const fg::shape out = rule.shape(shapes);
  for (const auto& x : xs) hs.push_back(dispatch::host_operand(x, rule.name));
  tensor<R> h(out, fg::device::cpu(), rule.name);
  rule.host(h.buffer()->data, hs);
  const tensor<R> y = h.to(xs.empty() ? fg::device::cpu() : xs[0].device());
  if constexpr (std::is_floating_point_v<R>)
    if (core::checking_numerics()) [[unlikely]]
      if (const core::nonfinite f = core::find_nonfinite(y))
        throw value_error(core::cat("fg::debugging: '", rule.name, "' produced ", f.words(), " values from ", xs.size(),
                                    " operands (in a result of shape ", y.shape(), "; check_numerics)"));
  if constexpr (std::is_floating_point_v<R>) {
    if (autodiff::recording()) {
      std::vector<tensor_id> ids;
      for (const auto& x : xs) ids.push_back(x.id());
      autodiff::record_op<R>(rule.name, ids, y,
                             [rule](const tensor<R>& g, std::span<const bool> need) { return rule.backward(g, need); });
    }
  }
  return y;
}
}  // namespace fusegrad::ops
