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
///    host copies, the result moved back to the operands' device. A result of no elements runs
///    no kernel (Note [empty results]);
/// 6. ends in the op's epilogue (Note [eager epilogue]): the numerics check names the op and its
///    operands' shapes; then, for a floating R, one tape entry whose inputs are the first
///    `Rule::differentiable` operands (all by default; 0 records nothing) and whose backward is
///    `rule.backward(g, needed)`, or `rule.backward(g, needed, s)` where the rule keeps
///    `s = rule.saved(result, operands...)` (only what its backward reads). A backward is written
///    with fusegrad's public functions, called unqualified so the rules header need not include
///    this floor, so it is recorded in turn and gives gradients of every order.
/// The rules members: `name` (a string literal: messages and the tape name the op by it),
/// `shape`, `host` (or `product`), `backward` (unless it differentiates nothing); optionally
/// `differentiable`, `saved`, `device`, `forwards_operand`. One runner serves both kinds of
/// operands: a pack of tensors of any types, and a run-time list of tensors of one type (concat),
/// passed as a `std::vector<tensor<T>>`, whose rules take a vector of shapes and a vector of host
/// operands, return a vector of gradients and differentiate every operand (a host kernel only,
/// nothing saved). A new op is one rules struct and its test: the evaluators and the tape do not
/// change; a new kind of kernel with host and device implementations adds a request and its
/// dispatch in eval/ (conv2d's ops::run_conv, eval/conv.hpp), which the rule's kernels call.
/// Note [empty results]: a result with a zero among its dimensions holds nothing, yet the other
/// dimensions may be 2^31 or more, and a kernel that loops over them (concat's outer slices, a
/// scan's rows, gather's outer slices, a batch of matrix products) would spend seconds or hours
/// doing nothing. So the runner allocates such a result and runs no kernel, as TensorFlow returns
/// an empty result at once (and, like it, does not look at gather's indices then). Ops whose
/// result is not empty but whose work is (a product over k = 0, a reduction over an empty axis)
/// fill the result in time proportional to it: gemm fills zeros, a reduction its identity.

#include <array>
#include <cstddef>
#include <functional>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../autodiff/record_op.hpp"
#include "../eval/linalg.hpp"
#include "../ops/boundary.hpp"
#include "epilogue.hpp"
#include "evaluate.hpp"
#include "reshape.hpp"

namespace fusegrad::eager {
namespace boundary {
inline void check_defined(bool defined, const char* op) {
  FG_CHECK(defined, value_error, "fg::", op, ": an operand is undefined (an unconnected gradient?)");
}

/// The operands of a boundary op, evaluated: a pack of tensors of any types, or a run-time list
/// of tensors of one type (concat). The runner reads them through the functions below, so that
/// one runner serves both.
template <class... T>
using pack = std::tuple<const tensor<T>&...>;
template <class Xs>
inline constexpr bool is_list = false;
template <class T>
inline constexpr bool is_list<std::vector<tensor<T>>> = true;

/// f(x) for each operand.
template <class... T, class F>
void each(const pack<T...>& xs, F&& f) {
  std::apply([&](const auto&... x) { (f(x), ...); }, xs);
}
template <class T, class F>
void each(const std::vector<tensor<T>>& xs, F&& f) {
  for (const tensor<T>& x : xs) f(x);
}
/// f(m(x)...) over a pack; f(std::vector{m(x)...}) over a list, whose rules take vectors.
template <class... T, class F, class M>
decltype(auto) spread(const pack<T...>& xs, F&& f, M&& m) {
  return std::apply([&](const auto&... x) -> decltype(auto) { return f(m(x)...); }, xs);
}
template <class T, class F, class M>
decltype(auto) spread(const std::vector<tensor<T>>& xs, F&& f, M&& m) {
  std::vector<std::decay_t<decltype(m(std::declval<const tensor<T>&>()))>> v;
  v.reserve(xs.size());
  for (const tensor<T>& x : xs) v.push_back(m(x));
  return f(v);
}
/// The device of the first operand (the host for an empty list).
template <class... T>
fg::device first_device(const pack<T...>& xs) {
  return std::get<0>(xs).device();
}
template <class T>
fg::device first_device(const std::vector<tensor<T>>& xs) {
  return xs.empty() ? fg::device::cpu() : xs[0].device();
}
/// The operands' shapes, for messages.
template <class... T>
auto shapes_of(const pack<T...>& xs) {
  return std::apply(
      [](const auto&... x) { return std::array<std::reference_wrapper<const fg::shape>, sizeof...(T)>{x.shape()...}; }, xs);
}
template <class T>
std::vector<std::reference_wrapper<const fg::shape>> shapes_of(const std::vector<tensor<T>>& xs) {
  std::vector<std::reference_wrapper<const fg::shape>> v;
  for (const tensor<T>& x : xs) v.emplace_back(x.shape());
  return v;
}

/// What a rules struct has (Note [boundary ops]); named concepts rather than requires-expressions
/// inside `if constexpr`, which nvcc's front end does not always evaluate over a parameter pack.
/// A list's rules have a host kernel only and keep nothing.
template <class Rule>
concept forwards_operands = requires(const Rule& r) { r.forwards_operand(); };
template <class Rule, class R, class Xs>
constexpr bool has_device_kernel = false;
template <class Rule, class R, class... T>
  requires requires(const Rule& r, R* p, const tensor<T>&... x) { r.device(p, x...); }
constexpr bool has_device_kernel<Rule, R, pack<T...>> = true;
template <class Rule>
concept asks_product = requires(const Rule& r) { r.product(); };
template <class Rule, class R, class Xs>
constexpr bool keeps_saved = false;
template <class Rule, class R, class... T>
  requires requires(const Rule& r, const tensor<R>& y, const tensor<T>&... x) { r.saved(y, x...); }
constexpr bool keeps_saved<Rule, R, pack<T...>> = true;

/// How many leading operands of a pack a rule differentiates (Note [boundary ops], step 6).
template <class Rule, std::size_t operands>
constexpr std::size_t differentiable() {
  if constexpr (requires { Rule::differentiable; }) return Rule::differentiable;
  else return operands;
}
/// The ids of the operands a rule differentiates: the first differentiable<Rule>() of a pack,
/// every operand of a list.
template <class Rule, class... T>
auto input_ids(const pack<T...>& xs) {
  const std::array<tensor_id, sizeof...(T)> all = std::apply([](const auto&... x) { return std::array{x.id()...}; }, xs);
  std::array<tensor_id, differentiable<Rule, sizeof...(T)>()> ids;
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = all[i];
  return ids;
}
template <class Rule, class T>
std::vector<tensor_id> input_ids(const std::vector<tensor<T>>& xs) {
  std::vector<tensor_id> ids;
  for (const tensor<T>& x : xs) ids.push_back(x.id());
  return ids;
}
/// Whether the op records a tape entry: a floating-point result, and an operand to differentiate.
template <class Rule, class R, class Xs>
constexpr bool records = [] {
  if constexpr (!std::is_floating_point_v<R>) return false;
  else if constexpr (is_list<Xs>) return true;
  else return differentiable<Rule, std::tuple_size_v<Xs>>() > 0;
}();

inline constexpr auto same = [](const auto& x) -> const auto& { return x; };

/// Step 6: one tape entry over the differentiable operands, whose backward is the rule's.
template <class Rule, class R, class Xs>
void record(const Rule& rule, const tensor<R>& y, const Xs& xs) {
  const auto ids = input_ids<Rule>(xs);
  const std::span<const tensor_id> inputs(ids.data(), ids.size());
  if constexpr (keeps_saved<Rule, R, Xs>)
    autodiff::record_op<R>(rule.name, inputs, y,
                           [rule, s = spread(xs, [&](const auto&... x) { return rule.saved(y, x...); }, same)](
                               const tensor<R>& g, std::span<const bool> need) { return rule.backward(g, need, s); });
  else
    autodiff::record_op<R>(rule.name, inputs, y,
                           [rule](const tensor<R>& g, std::span<const bool> need) { return rule.backward(g, need); });
}

/// Steps 1 to 6 of Note [boundary ops] on evaluated operands xs (a pack or a list).
template <class R, class Rule, class Xs>
tensor<R> run(Rule rule, const Xs& xs) {
  each(xs, [&](const auto& x) { check_defined(x.defined(), rule.name); });
  const fg::device d = first_device(xs);
  each(xs, [&](const auto& x) { dispatch::check_same_device(rule.name, d, x.device()); });
  const fg::shape out = spread(
      xs, [&](const auto&... s) { return rule.shape(s...); }, [](const auto& x) -> const auto& { return x.shape(); });
  if constexpr (forwards_operands<Rule>)
    if (rule.forwards_operand()) return reshape(std::get<0>(xs), out);
  tensor<R> y;
  if (out.elements() == 0) {  // Note [empty results]
    y = tensor<R>(out, d, rule.name);
  } else if constexpr (asks_product<Rule>) {
    static_assert(std::tuple_size_v<Xs> == 2, "fusegrad: a rule that asks for a product takes two operands");
    const auto& [a, b] = xs;
    y = tensor<R>(out, d, rule.name);
    dispatch::run_gemm<R>(rule.product(), a.data(), b.data(), y.buffer()->data, d);
  } else {
    if constexpr (has_device_kernel<Rule, R, Xs>)
      if (d.is_gpu()) {
        y = tensor<R>(out, d, rule.name);
        spread(xs, [&](const auto&... x) { rule.device(y.buffer()->data, x...); }, same);
      }
    if (!y.defined()) {
      tensor<R> h(out, fg::device::cpu(), rule.name);
      spread(xs, [&](const auto&... x) { rule.host(h.buffer()->data, x...); },
             [&](const auto& x) { return dispatch::host_operand(x, rule.name); });
      y = h.to(d);
    }
  }
  epilogue(  // Note [eager epilogue]
      y, [&](const auto& r, core::nonfinite f) { report_op(rule.name, f, shapes_of(xs), r.shape()); },
      [&](const auto& r) {
        if constexpr (records<Rule, R, Xs>) record(rule, r, xs);
      });
  return y;
}
}  // namespace boundary
}  // namespace fusegrad::eager

// The runner declared by ops/boundary.hpp.
namespace fusegrad::ops {

template <class R, class Rule, tensor_like... X>
tensor<R> run_boundary(Rule rule, const X&... xs) {
  return [&](const auto&... ts) { return eager::boundary::run<R>(std::move(rule), std::tie(ts...)); }(eval(xs)...);
}

template <class R, class Rule, class T>
tensor<R> run_boundary(Rule rule, const std::vector<tensor<T>>& xs) {
  return eager::boundary::run<R>(std::move(rule), xs);
}
}  // namespace fusegrad::ops
