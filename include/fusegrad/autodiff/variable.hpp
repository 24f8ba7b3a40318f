#pragma once
/// \file (Used with <fusegrad/eager/evaluate.hpp>, which evaluates expressions; the umbrella header has both.)
/// fg::variable<T>: a named, mutable handle to a tensor value, watched automatically by
/// tapes (TensorFlow's tf.Variable). Every value a variable holds carries the variable's id, so
/// a gradient with respect to the variable sums over all its reads, as in TensorFlow.

#include <string>

#include "../ops/common.hpp"
#include "gradient_tape.hpp"

namespace fusegrad {

template <class T>
class variable {
 public:
  using value_type = T;

  /// A variable holding `initial`.
  variable(const tensor<T>& initial, std::string name = "Variable", bool trainable = true)
      : s_(std::make_shared<state>()) {
    FG_CHECK(initial.defined(), value_error, "fg::variable: the initial value is undefined");
    s_->id = detail::next_id();
    s_->value = tensor<T>(initial.buffer(), initial.shape(), s_->id);
    s_->name = std::move(name);
    s_->trainable = trainable && std::is_floating_point_v<T>;
  }
  /// A variable holding the value of an expression.
  template <expression E>
  variable(const E& initial, std::string name = "Variable", bool trainable = true)
      : variable(tensor<T>(initial), std::move(name), trainable) {}
  /// A rank-0 variable.
  variable(T v, std::string name = "Variable", bool trainable = true) : variable(tensor<T>(v), std::move(name), trainable) {}

  /// The current value (a read: tapes that watch accessed variables start watching this one).
  tensor<T> value() const {
    notify_read();
    return s_->value;
  }
  /// Alias of value().
  tensor<T> read_value() const { return value(); }
  /// Replaces the value; its shape must not change.
  variable& assign(const tensor<T>& v) {
    FG_CHECK(v.defined() && v.shape() == s_->value.shape(), shape_error, "fg::variable::assign: variable '", s_->name,
             "' has shape ", s_->value.shape(), " but the new value has shape ",
             v.defined() ? v.shape().str() : std::string("undefined"), "; the value is unchanged");
    s_->value = tensor<T>(v.buffer(), v.shape(), s_->id);
    return *this;
  }
  template <tensor_like E>
  variable& assign(const E& e) { return assign(tensor<T>(eval(e))); }
  /// value += delta.
  template <class E>
  variable& assign_add(const E& delta) { return assign(tensor<T>(eval(s_->value + delta))); }
  /// value -= delta.
  template <class E>
  variable& assign_sub(const E& delta) { return assign(tensor<T>(eval(s_->value - delta))); }

  const std::string& name() const noexcept { return s_->name; }
  bool trainable() const noexcept { return s_->trainable; }
  const fg::shape& shape() const noexcept { return s_->value.shape(); }
  static constexpr fg::dtype dtype() noexcept { return dtype_of<T>(); }
  /// The id every value of this variable carries.
  tensor_id id() const noexcept { return s_->id; }
  /// The value as it is, without counting as a read.
  const tensor<T>& peek() const noexcept { return s_->value; }
  /// Shared state (internal: tapes keep variables alive through it).
  std::shared_ptr<void> handle() const noexcept { return s_; }
  /// Rebuilds a variable from its shared state (internal).
  static variable from_handle(const std::shared_ptr<void>& h) { return variable(std::static_pointer_cast<state>(h)); }

 private:
  struct state {
    tensor<T> value;
    std::string name;
    bool trainable = true;
    tensor_id id = 0;
  };
  explicit variable(std::shared_ptr<state> s) : s_(std::move(s)) {}
  void notify_read() const {
    if (s_->trainable && detail::recording()) detail::on_variable_read(s_, s_->id, dtype_of<T>());
    if (s_->trainable && !detail::variable_read_observers().empty())
      for (auto* obs : detail::variable_read_observers()) obs(s_, s_->id, dtype_of<T>());
  }
  std::shared_ptr<state> s_;
};

template <class T>
tensor<T>::tensor(const variable<T>& v) : tensor(v.value()) {}

namespace detail {
template <class T> expr::leaf<T> to_operand(const variable<T>& v) { return {v.value()}; }
}

template <class T>
void gradient_tape::watch(const variable<T>& v) {
  check_thread("watch");
  if constexpr (!std::is_floating_point_v<T>) warn_integer_watch();
  else state_.watch_variable(v.handle(), v.id(), dtype_of<T>());
}

template <class T>
std::vector<variable<T>> gradient_tape::watched_variables() const {
  std::vector<variable<T>> r;
  for (const auto& w : state_.variables)
    if (w.type == dtype_of<T>()) r.push_back(variable<T>::from_handle(w.state));
  return r;
}

template <class T>
gradient_tape::source gradient_tape::source_of(const variable<T>& v) const {
  return {v.id(), v.shape(), dtype_of<T>()};
}
}  // namespace fusegrad
