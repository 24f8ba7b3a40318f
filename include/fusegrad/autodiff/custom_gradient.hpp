#pragma once
/// \file (Used with <fusegrad/eager/evaluate.hpp>, which evaluates expressions; the umbrella header has both.)
/// fg::custom_gradient: a function that supplies its own gradient (tf.custom_gradient).
/// Note [custom gradient recording]: the forward function runs with the tapes recording as
/// usual, so tensors it saves for its gradient function (like `e = exp(x)` in log1pexp) stay
/// connected to the inputs; its outputs are then re-issued under new identities and ONE entry is
/// recorded from the inputs (and the variables the function read) to them, whose backward is the
/// user's gradient function. The gradient function's own ops are recorded by any tape that
/// tracks what they read, so second derivatives through it work when it is differentiable.

#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "variable.hpp"

namespace fusegrad {
namespace autodiff {

/// Collects the variables read while alive (this thread), for custom gradients with variables.
struct variable_read_log {
  std::vector<watched_variable> reads;
  static std::vector<variable_read_log*>& stack() {
    thread_local std::vector<variable_read_log*> s;
    return s;
  }
  variable_read_log() {
    if (stack().empty()) variable_read_observers().push_back(&log_variable_read);
    stack().push_back(this);
  }
  variable_read_log(const variable_read_log&) = delete;
  ~variable_read_log() {
    stack().pop_back();
    if (stack().empty()) std::erase(variable_read_observers(), &log_variable_read);
  }
  static void log_variable_read(const std::shared_ptr<void>& state, tensor_id id, dtype t);
};
inline void variable_read_log::log_variable_read(const std::shared_ptr<void>& state, tensor_id id, dtype t) {
  for (variable_read_log* l : variable_read_log::stack()) {
    bool seen = false;
    for (const auto& r : l->reads) seen = seen || r.id == id;
    if (!seen) l->reads.push_back({state, id, t});
  }
}

template <class T> tensor<T> reissue(const tensor<T>& t) { return tensor<T>(t.buffer(), t.shape(), core::next_id()); }

/// Checks one gradient returned by a user's gradient function against what it is for.
template <class T>
void check_custom_grad(const tensor<T>& g, const fg::shape& expected, std::size_t i, const char* what) {
  if (!g.defined()) return;
  FG_CHECK(g.shape() == expected, shape_error, "fg::custom_gradient: the gradient function returned a gradient of shape ",
           g.shape(), " for ", what, " ", i, ", which has shape ", expected, "; return one gradient per ", what,
           " with its shape");
}


/// Turns what a gradient function returned (a tensor, a vector, a tuple, an array, or an
/// expression) into a vector of tensors of T.
template <class T, class R>
std::vector<tensor<T>> as_grad_vector(R&& r) {
  using D = std::remove_cvref_t<R>;
  if constexpr (std::is_same_v<D, std::vector<tensor<T>>>) {
    return std::forward<R>(r);
  } else if constexpr (tensor_like<D>) {
    return {tensor<T>(eval(r))};
  } else {
    return fg::core::apply([](auto&&... g) { return std::vector<tensor<T>>{tensor<T>(eval(g))...}; },
                           std::forward<R>(r));
  }
}

template <class T, class Grad, std::size_t NIn>
struct custom_entry final : backward_fn {
  Grad grad;
  std::array<fg::shape, NIn> in_shapes;
  std::vector<fg::shape> out_shapes;
  std::vector<watched_variable> vars;
  custom_entry(Grad g, std::array<fg::shape, NIn> ins, std::vector<fg::shape> outs, std::vector<watched_variable> v)
      : grad(std::move(g)), in_shapes(std::move(ins)), out_shapes(std::move(outs)), vars(std::move(v)) {}
  const char* name() const noexcept override { return "custom_gradient"; }

  void run(std::span<const any_grad> upstream, std::span<const bool>, std::span<any_grad> grads) override {
    std::vector<tensor<T>> dys;
    for (std::size_t k = 0; k < out_shapes.size(); ++k) {
      const auto* g = std::get_if<tensor<T>>(&upstream[k]);
      dys.push_back(g ? *g : zeros<T>(out_shapes[k]));
    }
    std::vector<tensor<T>> gin, gvar;
    if constexpr (std::is_invocable_v<Grad&, const tensor<T>&, const std::vector<variable<T>>&> ||
                  std::is_invocable_v<Grad&, const std::vector<tensor<T>>&, const std::vector<variable<T>>&>) {
      std::vector<variable<T>> vs;
      for (const auto& v : vars) vs.push_back(variable<T>::from_handle(v.state));
      auto r = call(dys, vs);
      gin = as_grad_vector<T>(std::move(r.first));
      gvar = as_grad_vector<T>(std::move(r.second));
      FG_CHECK(gvar.size() == vars.size(), tape_error, "fg::custom_gradient: the gradient function returned ",
               gvar.size(), " variable gradients but the function read ", vars.size(), " variables");
    } else {
      FG_CHECK(vars.empty(), tape_error, "fg::custom_gradient: the function read ", vars.size(),
               " trainable variables, so its gradient function must take (dy, const std::vector<fg::variable<T>>&) "
               "and return {input gradients, variable gradients}");
      gin = as_grad_vector<T>(call(dys));
    }
    FG_CHECK(gin.size() == NIn, tape_error, "fg::custom_gradient: the gradient function returned ", gin.size(),
             " gradients but the function has ", NIn, " inputs; return one gradient per input");
    for (std::size_t i = 0; i < NIn; ++i) check_custom_grad(gin[i], in_shapes[i], i, "input");
    for (std::size_t i = 0; i < gvar.size(); ++i)
      check_custom_grad(gvar[i], variable<T>::from_handle(vars[i].state).shape(), i, "variable");
    for (std::size_t i = 0; i < NIn; ++i)
      if (gin[i].defined()) grads[i] = gin[i];
    for (std::size_t i = 0; i < gvar.size(); ++i)
      if (gvar[i].defined()) grads[NIn + i] = gvar[i];
  }

 private:
  template <class... V>
  decltype(auto) call(const std::vector<tensor<T>>& dys, V&... vs) {
    if constexpr (std::is_invocable_v<Grad&, const tensor<T>&, V&...>) {
      FG_CHECK(dys.size() == 1, tape_error, "fg::custom_gradient: the function has ", dys.size(),
               " outputs; its gradient function must take const std::vector<fg::tensor<T>>&");
      return grad(dys[0], vs...);
    } else {
      return grad(dys, vs...);
    }
  }
};
}  // namespace autodiff

/// Wraps f, which returns {value, gradient function}, into a function whose gradient is the
/// given one (tf.custom_gradient). The value is a tensor (or a std::vector of tensors for several
/// outputs); the gradient function maps the upstream gradient(s) to one gradient per input, and
/// also takes the variables f read and returns their gradients when f reads variables.
template <class F>
auto custom_gradient(F f) {
  return [f](const auto&... args) {
    using T = std::common_type_t<value_type_of<decltype(args)>...>;
    static_assert((std::is_same_v<value_type_of<decltype(args)>, T> && ...),
                  "fg::custom_gradient: all inputs must have one element type");
    const std::array<tensor<T>, sizeof...(args)> in{tensor<T>(eval(args))...};
    autodiff::variable_read_log log;
    // Named members, not a structured binding: the lambda below captures grad, which clang
    // before 16 refuses for a binding.
    auto result = fg::core::apply([&](const auto&... a) { return f(a...); }, in);
    auto& value = std::get<0>(result);
    auto& grad = std::get<1>(result);
    std::vector<tensor<T>> outs;
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(value)>, std::vector<tensor<T>>>) {
      for (const auto& v : value) outs.push_back(autodiff::reissue(v));
    } else {
      outs.push_back(autodiff::reissue(tensor<T>(eval(value))));
    }
    if (autodiff::recording()) {
      autodiff::id_list ids, out_ids;
      std::array<fg::shape, sizeof...(args)> shapes;
      for (std::size_t i = 0; i < in.size(); ++i) {
        ids.push_back(in[i].id());
        shapes[i] = in[i].shape();
      }
      std::vector<autodiff::watched_variable> vars;
      for (const auto& r : log.reads)
        if (r.type == dtype_of<T>()) {
          vars.push_back(r);
          ids.push_back(r.id);
        }
      std::vector<fg::shape> out_shapes;
      std::vector<autodiff::slot_meta> out_meta;
      for (const auto& o : outs) {
        out_ids.push_back(o.id());
        out_shapes.push_back(o.shape());
        out_meta.push_back(autodiff::meta_of(o));
      }
      using G = std::remove_cvref_t<decltype(grad)>;
      autodiff::record(std::span<const tensor_id>(ids.data(), ids.size()),
                       std::span<const tensor_id>(out_ids.data(), out_ids.size()), out_meta.data(), [&] {
                       return std::make_shared<autodiff::custom_entry<T, G, sizeof...(args)>>(
                           grad, shapes, std::move(out_shapes), std::move(vars));
                     });
    }
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(value)>, std::vector<tensor<T>>>) return outs;
    else return outs[0];
  };
}
}  // namespace fusegrad
