#pragma once
/// \file (Used with <fusegrad/eager/evaluate.hpp>, which evaluates expressions; the umbrella header has both.)
/// fg::variable<T>: a named, mutable handle to a tensor value, watched automatically by
/// tapes (TensorFlow's tf.Variable). Every value a variable holds carries the variable's id, so
/// a gradient with respect to the variable sums over all its reads, as in TensorFlow.
/// Note [variable values]: a variable may be read on some threads while another assigns it
/// (a parameter server, a model evaluated while it trains). Its value is a tensor, an immutable
/// buffer shared by whoever read it, so a read needs only a consistent copy of the handle: each
/// read (value(), peek(), an expression's operand) copies the current tensor, and each assign
/// swaps in a new one, under a lock held just for that copy or swap. A reader sees the old value
/// or the new one, never a mix, and keeps the value it read however often the variable is
/// assigned afterwards. The shape, name, id and trainable flag never change, so they are read
/// without the lock. One exception to "assign swaps": a training op (eager/training.hpp) writes
/// the value in place when no tensor but the variable holds its buffer, and holds the lock for
/// that pass (update_unshared), so a reader that arrives meanwhile waits and then sees the new
/// value: no reader can hold the old one, and none sees a mix. assign_add and assign_sub are a read followed by an assign, not one step:
/// updates of one variable from several threads at once must be serialised by the caller.

#include <atomic>
#include <mutex>
#include <string>
#include <thread>

#include "../ops/common.hpp"
#include "gradient_tape.hpp"

namespace fusegrad {
namespace autodiff {
/// The lock of a variable's value (Note [variable values]): held only to copy or swap a tensor
/// handle, a few instructions, so it spins, yielding to other threads while it waits.
class value_lock {
 public:
  void lock() noexcept {
    while (locked_.exchange(true, std::memory_order_acquire))
      while (locked_.load(std::memory_order_relaxed)) std::this_thread::yield();
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};
}  // namespace autodiff

/// A mutable handle to a tensor value. Reads and assignments may run on different threads at
/// once: a read sees the value before or after an assignment, never a torn one (Note [variable
/// values]); assign_add and assign_sub are a read then an assign, not atomic as a whole.
template <class T>
class variable {
 public:
  using value_type = T;

  /// A variable holding `initial`.
  variable(const tensor<T>& initial, std::string name = "Variable", bool trainable = true)
      : s_(std::make_shared<state>()) {
    FG_CHECK(initial.defined(), value_error, "fg::variable: the initial value is undefined");
    s_->id = core::next_id();
    s_->value = tensor<T>(initial.buffer(), initial.shape(), s_->id);
    s_->shape = initial.shape();
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
    live("value");
    notify_read();
    return load();
  }
  /// Alias of value().
  tensor<T> read_value() const { return value(); }
  /// Replaces the value; its shape must not change. Safe while other threads read the variable.
  variable& assign(const tensor<T>& v) {
    live("assign");
    FG_CHECK(v.defined() && v.shape() == s_->shape, shape_error, "fg::variable::assign: variable '", s_->name,
             "' has shape ", s_->shape, " but the new value has shape ",
             v.defined() ? v.shape().str() : std::string("undefined"), "; the value is unchanged");
    tensor<T> next(v.buffer(), v.shape(), s_->id);
    {
      const std::lock_guard<autodiff::value_lock> g(s_->lock);
      std::swap(s_->value, next);
    }
    return *this;  // `next`, now the old value, is released here, outside the lock
  }
  template <tensor_like E>
  variable& assign(const E& e) {
    live("assign");
    return assign(tensor<T>(eval(e)));
  }
  /// value += delta.
  template <class E>
  variable& assign_add(const E& delta) {
    live("assign_add");
    return assign(tensor<T>(eval(load() + delta)));
  }
  /// value -= delta.
  template <class E>
  variable& assign_sub(const E& delta) {
    live("assign_sub");
    return assign(tensor<T>(eval(load() - delta)));
  }

  /// The name given at construction. Like every member but dtype(), throws fg::value_error on a
  /// moved-from variable (Note [moved-from objects]).
  const std::string& name() const { return live("name").name; }
  bool trainable() const { return live("trainable").trainable; }
  const fg::shape& shape() const { return live("shape").shape; }
  /// The element type (a property of the C++ type, so also of a moved-from variable).
  static constexpr fg::dtype dtype() noexcept { return dtype_of<T>(); }
  /// The id every value of this variable carries.
  tensor_id id() const { return live("id").id; }
  /// The value as it is, without counting as a read.
  tensor<T> peek() const {
    live("peek");
    return load();
  }
  /// False for a moved-from variable.
  bool valid() const noexcept { return static_cast<bool>(s_); }
  /// Calls f(p), p the elements of the value's own buffer, holding the value's lock, when that
  /// buffer is on the host and no tensor but the variable holds it, and returns what f returns;
  /// returns false without calling f otherwise (internal: the training ops' in-place step,
  /// Note [variable values]).
  template <class F>
  bool update_unshared(F&& f) {
    live("update");
    const std::lock_guard<autodiff::value_lock> g(s_->lock);
    const auto& b = s_->value.buffer();
    if (b.use_count() != 1 || b->dev != fg::device::cpu()) return false;
    return f(b->data);
  }
  /// Shared state (internal: tapes keep variables alive through it).
  std::shared_ptr<void> handle() const noexcept { return s_; }
  /// Rebuilds a variable from its shared state (internal).
  static variable from_handle(const std::shared_ptr<void>& h) { return variable(std::static_pointer_cast<state>(h)); }

 private:
  struct state {
    autodiff::value_lock lock;  ///< guards value (Note [variable values])
    tensor<T> value;
    fg::shape shape;          ///< value's shape, which never changes
    std::string name;
    bool trainable = true;
    tensor_id id = 0;
  };
  explicit variable(std::shared_ptr<state> s) : s_(std::move(s)) {}
  /// The state, or a value_error naming `op` when the variable was moved from.
  state& live(const char* op) const {
    FG_CHECK(s_, value_error, "fg::variable::", op,
             ": the variable was moved from and holds no value; use the variable it was moved to");
    return *s_;
  }
  /// A copy of the current value (Note [variable values]).
  tensor<T> load() const {
    const std::lock_guard<autodiff::value_lock> g(s_->lock);
    return s_->value;
  }
  void notify_read() const {
    if (s_->trainable && autodiff::recording()) autodiff::on_variable_read(s_, s_->id, dtype_of<T>());
    if (s_->trainable && !autodiff::variable_read_observers().empty())
      for (auto* obs : autodiff::variable_read_observers()) obs(s_, s_->id, dtype_of<T>());
  }
  std::shared_ptr<state> s_;
};

template <class T>
tensor<T>::tensor(const variable<T>& v) : tensor(v.value()) {}

namespace ops {
template <class T> expr::leaf<T> to_operand(const variable<T>& v) { return {v.value()}; }
}

template <class T>
void gradient_tape::watch(const variable<T>& v) {
  check_thread("watch");
  FG_CHECK(v.valid(), value_error, "gradient_tape::watch: the variable was moved from and holds no value");
  if constexpr (!std::is_floating_point_v<T>) warn_integer_watch();
  else state_.watch_variable(v.handle(), v.id(), dtype_of<T>());
}

template <class T>
std::vector<variable<T>> gradient_tape::watched_variables() const {
  check_reader_thread("watched_variables");
  std::vector<variable<T>> r;
  for (const auto& w : state_.variables)
    if (w.type == dtype_of<T>()) r.push_back(variable<T>::from_handle(w.state));
  return r;
}

template <class T>
gradient_tape::source gradient_tape::source_of(const variable<T>& v) const {
  FG_CHECK(v.valid(), value_error, "gradient_tape::gradient: a source variable was moved from and holds no value");
  return {v.id(), v.shape(), dtype_of<T>()};
}
}  // namespace fusegrad
