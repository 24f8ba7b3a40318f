#pragma once
/// \file (Used with <fusegrad/eager/evaluate.hpp>, which evaluates expressions; the umbrella header has both.)
/// The tfe functional gradient API (seeds 001, 003, 004): gradients_function,
/// value_and_gradients_function, implicit_gradients, implicit_value_and_gradients. Each wraps a
/// function into one that runs it under a fresh gradient tape; nested wrappers give
/// higher-order derivatives (the outer tape records the inner tape's backward pass).

#include <array>
#include <tuple>
#include <utility>
#include <vector>

#include "variable.hpp"

namespace fusegrad {
namespace autodiff {
/// An argument of a wrapped function as a tensor: C++ scalars become rank-0 tensors.
template <class A>
auto as_tensor_arg(const A& a) {
  if constexpr (scalar_like<A>) return tensor<A>(a);
  else return tensor<value_type_of<A>>(eval(a));
}

/// The gradients of the tensors in `in`, as a std::array when they share one type, else a tuple.
template <class... T>
auto gradients_of(gradient_tape& tape, const auto& y, const std::tuple<tensor<T>...>& in) {
  if constexpr (sizeof...(T) > 0 && (std::is_same_v<T, std::tuple_element_t<0, std::tuple<T...>>> && ...)) {
    using U = std::tuple_element_t<0, std::tuple<T...>>;
    std::vector<tensor<U>> srcs = fg::core::apply([](const auto&... t) { return std::vector<tensor<U>>{t...}; }, in);
    std::vector<tensor<U>> g = tape.gradient(y, srcs);
    std::array<tensor<U>, sizeof...(T)> r;
    std::move(g.begin(), g.end(), r.begin());
    return r;
  } else {
    return fg::core::apply([&](const auto&... t) { return tape.gradient(y, std::tie(t...)); }, in);
  }
}

template <class F, class... A>
auto value_and_gradients(const F& f, const A&... args) {
  auto in = std::make_tuple(as_tensor_arg(args)...);
  gradient_tape tape;
  fg::core::apply([&](const auto&... t) { (tape.watch(t), ...); }, in);
  auto y = fg::core::apply([&](const auto&... t) { return eval(f(t...)); }, in);
  auto g = gradients_of(tape, y, in);
  return std::make_pair(y, std::move(g));
}

template <class T, class F, class... A>
auto implicit_value_and_gradients_impl(const F& f, const A&... args) {
  gradient_tape tape;
  auto y = eval(f(args...));
  std::vector<variable<T>> vars = tape.watched_variables<T>();
  std::vector<tensor<T>> g = tape.gradient(y, vars);
  std::vector<std::pair<tensor<T>, variable<T>>> r;
  for (std::size_t i = 0; i < vars.size(); ++i) r.emplace_back(g[i], vars[i]);
  return std::make_pair(y, std::move(r));
}
}  // namespace autodiff

/// f's gradients with respect to each of its arguments: `auto [ga, gb] = fg::gradients_function(f)(a, b);`
/// (a std::array when the arguments share one type, else a std::tuple).
template <class F>
auto gradients_function(F f) {
  return [f](const auto&... args) { return autodiff::value_and_gradients(f, args...).second; };
}

/// f's value together with its gradients: `auto [value, grads] = fg::value_and_gradients_function(f)(x);`
template <class F>
auto value_and_gradients_function(F f) {
  return [f](const auto&... args) { return autodiff::value_and_gradients(f, args...); };
}

/// Gradients of f with respect to the trainable variables it reads, as (gradient, variable) pairs
/// in the order f first read them. T is the variables' element type.
template <class T = float, class F>
auto implicit_gradients(F f) {
  return [f](const auto&... args) { return autodiff::implicit_value_and_gradients_impl<T>(f, args...).second; };
}

/// f's value together with implicit_gradients' (gradient, variable) pairs.
template <class T = float, class F>
auto implicit_value_and_gradients(F f) {
  return [f](const auto&... args) { return autodiff::implicit_value_and_gradients_impl<T>(f, args...); };
}
}  // namespace fusegrad
