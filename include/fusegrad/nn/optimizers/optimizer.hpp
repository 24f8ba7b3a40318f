#pragma once
/// \file What every optimizer of fg::optimizers shares (Keras 3's base optimizer): the step
/// counter, the learning rate (a constant or a schedule of the step), gradient clipping
/// (clipnorm, global_clipnorm, clipvalue), slot variables made lazily per variable, and
/// apply_gradients / minimize. A concrete optimizer (sgd, adam, adamw, rmsprop, adagrad) says only
/// which slots a variable has and which training op (eager/training.hpp) moves it: each
/// variable's update is one fused pass over the gradient, the variable and its slots.
/// An optimizer is a handle, as fg::variable is: a copy is the same optimizer with the same
/// slots and step. It is not meant to be stepped from several threads at once.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "../../autodiff/gradient_tape.hpp"
#include "../../autodiff/variable.hpp"
#include "../../eager/evaluate.hpp"
#include "../../eager/reduce.hpp"
#include "../../eager/training.hpp"
#include "../../eval/creation.hpp"
#include "../../ops/binary.hpp"

namespace fusegrad::optimizers {

/// A learning rate: a constant, or a schedule giving the rate at each step (counted from 0, as
/// Keras' optimizer.iterations), such as exponential_decay.
class learning_rate {
 public:
  learning_rate(double constant) : constant_(constant) {}  // NOLINT: a plain number is a rate
  learning_rate(std::function<double(std::int64_t)> schedule) : schedule_(std::move(schedule)) {}  // NOLINT
  /// The rate at step `step`.
  double at(std::int64_t step) const { return schedule_ ? schedule_(step) : constant_; }
  bool is_schedule() const noexcept { return static_cast<bool>(schedule_); }

 private:
  double constant_ = 0;
  std::function<double(std::int64_t)> schedule_;
};

/// Gradient clipping, applied in Keras' order of precedence: clipnorm (each gradient scaled to
/// an L2 norm of at most clipnorm), else global_clipnorm (all gradients scaled together), else
/// clipvalue (each element clipped to [-clipvalue, clipvalue]).
struct clipping {
  std::optional<double> clipnorm = {}, global_clipnorm = {}, clipvalue = {};
};

/// One of an optimizer's variables, named as Keras names it: "iteration", and each slot
/// "<variable name, '/' as '_'>_<slot>" ("dense_kernel_momentum").
struct slot_variable {
  std::string name;
  std::variant<variable<float>, variable<double>, variable<std::int64_t>> value;
};

class optimizer {
 public:
  virtual ~optimizer() = default;

  /// The optimizer's name ("adam", "sgd", ...).
  const std::string& name() const noexcept { return s_->name; }
  /// The number of steps applied so far (Keras' optimizer.iterations).
  std::int64_t iterations() const { return s_->iterations.peek().cpu().item(); }
  /// The learning rate of the next step.
  double current_learning_rate() const { return s_->rate.at(iterations()); }
  /// Replaces the learning rate (a constant or a schedule) from the next step on.
  void set_learning_rate(learning_rate r) { s_->rate = std::move(r); }

  /// One step: each variable moved by its gradient. An undefined gradient (an unconnected
  /// variable) skips its variable. Everything is checked before anything changes: the counts,
  /// each gradient's shape and device against its variable's.
  template <class T>
  void apply_gradients(const std::vector<tensor<T>>& grads, const std::vector<variable<T>>& vars) {
    FG_CHECK(grads.size() == vars.size(), value_error, "fg::optimizers::", name(), "::apply_gradients: ", grads.size(),
             " gradients for ", vars.size(), " variables");
    for (std::size_t i = 0; i < vars.size(); ++i) {
      if (!grads[i].defined()) continue;
      FG_CHECK(grads[i].shape() == vars[i].shape(), shape_error, "fg::optimizers::", name(),
               "::apply_gradients: variable '", vars[i].name(), "' has shape ", vars[i].shape(),
               " but its gradient has shape ", grads[i].shape());
      FG_CHECK(grads[i].device() == vars[i].peek().device(), device_error, "fg::optimizers::", name(),
               "::apply_gradients: variable '", vars[i].name(), "' lives on ", vars[i].peek().device().str(),
               " but its gradient on ", grads[i].device().str());
    }
    const std::vector<tensor<T>> g = clipped(grads);
    const double lr = current_learning_rate();
    for (std::size_t i = 0; i < vars.size(); ++i) {
      if (!g[i].defined()) continue;
      update(vars[i], g[i], lr);
    }
    s_->iterations.assign(tensor<std::int64_t>(iterations() + 1).to(s_->iterations.peek().device()));
  }
  /// apply_gradients over (gradient, variable) pairs, as fg::implicit_gradients returns them.
  template <class T>
  void apply_gradients(const std::vector<std::pair<tensor<T>, variable<T>>>& pairs) {
    std::vector<tensor<T>> grads;
    std::vector<variable<T>> vars;
    for (const auto& [g, v] : pairs) {
      grads.push_back(g);
      vars.push_back(v);
    }
    apply_gradients(grads, vars);
  }
  /// Computes loss() under a gradient tape, then applies its gradients to vars; returns the loss.
  template <class F, class T = value_type_of<std::invoke_result_t<F&>>>
  tensor<T> minimize(F&& loss, const std::vector<variable<T>>& vars) {
    gradient_tape tape;
    const tensor<T> l = loss();
    apply_gradients(tape.gradient(l, vars), vars);
    return l;
  }

  /// The optimizer's variables: its step counter, then every slot made so far, in the order they
  /// were made (for checkpoints).
  std::vector<slot_variable> variables() const {
    std::vector<slot_variable> out{{"iteration", s_->iterations}};
    for (const slot_record& r : s_->order) out.push_back({r.name, r.value});
    return out;
  }
  /// The slots made so far for var, each named by its slot alone ("momentum"), in the order
  /// made (checkpoints name a slot by its variable).
  template <class T>
  std::vector<slot_variable> slots(const variable<T>& var) const {
    std::vector<slot_variable> out;
    if (const auto it = s_->slots.find(var.id()); it != s_->slots.end())
      for (const slot_record& r : it->second) out.push_back({r.slot, r.value});
    return out;
  }
  /// The slot `slot_name` of var, made now (filled with zeros) when the optimizer has not made
  /// it yet: how a checkpoint puts back the slots of an optimizer that has not stepped.
  template <class T>
  variable<T> add_slot(const variable<T>& var, const std::string& slot_name) {
    return slot(var, slot_name.c_str());
  }

 protected:
  optimizer(std::string name, learning_rate rate, clipping clip)
      : s_(std::make_shared<state>(std::move(name), std::move(rate), clip)) {}

  /// Moves var by its (clipped) gradient g at learning rate lr; the step is iterations() + 1.
  virtual void update(const variable<float>& var, const tensor<float>& g, double lr) = 0;
  virtual void update(const variable<double>& var, const tensor<double>& g, double lr) = 0;

  /// The slot `slot` of var (a handle), made on first use filled with `initial`.
  template <class T>
  variable<T> slot(const variable<T>& var, const char* slot, double initial = 0) {
    auto& slots = s_->slots[var.id()];
    for (const slot_record& r : slots)
      if (r.slot == slot) return std::get<variable<T>>(r.value);
    std::string base = var.name();
    for (char& c : base)
      if (c == '/' || c == ':') c = '_';
    const tensor<T> v = var.peek();
    variable<T> made(fill<T>(v.shape(), static_cast<T>(initial), v.device()), base + "_" + slot, false);
    slots.push_back({slot, base + "_" + slot, made});
    s_->order.push_back(slots.back());
    return made;
  }

 private:
  struct slot_record {
    std::string slot, name;
    std::variant<variable<float>, variable<double>, variable<std::int64_t>> value;
  };
  struct state {
    state(std::string n, learning_rate r, clipping c) : name(std::move(n)), rate(std::move(r)), clip(c) {}
    std::string name;
    learning_rate rate;
    clipping clip;
    variable<std::int64_t> iterations{std::int64_t{0}, "iteration", false};
    std::unordered_map<tensor_id, std::vector<slot_record>> slots;
    std::vector<slot_record> order;  ///< every slot, in the order made (copies share the variables)
  };

  /// The gradients after clipping (Keras' _clip_gradients).
  template <class T>
  std::vector<tensor<T>> clipped(const std::vector<tensor<T>>& grads) const {
    const clipping& c = s_->clip;
    std::vector<tensor<T>> out = grads;
    if (c.clipnorm && *c.clipnorm > 0) {
      const T n = static_cast<T>(*c.clipnorm);
      for (tensor<T>& g : out)
        if (g.defined()) {
          const T norm = std::sqrt(reduce_sum(g * g).cpu().item());
          g = tensor<T>(g * n / std::max(norm, n));
        }
    } else if (c.global_clipnorm && *c.global_clipnorm > 0) {
      T sum = 0;
      for (const tensor<T>& g : out)
        if (g.defined()) sum += reduce_sum(g * g).cpu().item();
      const T norm = std::sqrt(sum), n = static_cast<T>(*c.global_clipnorm);
      const T scale = n * std::min(T(1) / norm, T(1) / n) + (norm - norm);  // NaN when the norm is not finite
      for (tensor<T>& g : out)
        if (g.defined()) g = tensor<T>(g * scale);
    } else if (c.clipvalue && *c.clipvalue > 0) {
      const T v = static_cast<T>(*c.clipvalue);
      for (tensor<T>& g : out)
        if (g.defined()) g = tensor<T>(clip_by_value(g, -v, v));
    }
    return out;
  }

  std::shared_ptr<state> s_;
};

/// The two overrides of optimizer::update forwarding to Derived's template `step(var, g, lr)`.
template <class Derived>
class optimizer_of : public optimizer {
 protected:
  using optimizer::optimizer;
  void update(const variable<float>& var, const tensor<float>& g, double lr) override {
    static_cast<Derived*>(this)->step(var, g, lr);
  }
  void update(const variable<double>& var, const tensor<double>& g, double lr) override {
    static_cast<Derived*>(this)->step(var, g, lr);
  }
};
}  // namespace fusegrad::optimizers
