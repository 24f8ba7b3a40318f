#pragma once
/// \file fg::train::trackable: one object a checkpoint tracks, under a name, as a keyword
/// argument of tf.train.Checkpoint names it: an fg::variable of any element type, a model
/// (anything nn::named_variables walks: a layer, a sequential, a struct adapted to Boost.Hana,
/// a vector or array of them; Note [model walk]), or an optimizer of fg::optimizers. A trackable
/// holds a copy of its object, and the objects are handles (a copy of a layer, a model of
/// layers, a variable or an optimizer is the same object), so it sees the object's variables
/// as they are when a checkpoint is saved or restored, also those made after it was given.

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "../autodiff/variable.hpp"
#include "../nn/model.hpp"
#include "../nn/optimizers/optimizer.hpp"

namespace fusegrad::train {

/// A variable of any of fusegrad's element types.
using any_variable =
    std::variant<variable<float>, variable<double>, variable<std::int32_t>, variable<std::int64_t>, variable<bool>>;

/// What a trackable holds.
enum class trackable_kind { variable, model, optimizer };

namespace impl {
template <class X>
struct is_variable : std::false_type {};
template <class T>
struct is_variable<variable<T>> : std::true_type {};
template <class X>
struct is_tensor : std::false_type {};
template <class T>
struct is_tensor<tensor<T>> : std::true_type {};
}  // namespace impl

/// An optimizer of fg::optimizers (sgd, adam, adamw, rmsprop, adagrad, or one of their own).
template <class O>
concept optimizer_type = std::derived_from<std::remove_cvref_t<O>, optimizers::optimizer>;

/// One named object of a checkpoint: fg::train::checkpoint ckpt({{"model", m}, {"optimizer",
/// opt}, {"step", step}}).
class trackable {
 public:
  /// A variable of any element type, saved under `name`.
  template <element_type T>
  trackable(std::string name, const variable<T>& v)  // NOLINT: {"step", step} in a checkpoint's list
      : name_(std::move(name)), kind_(trackable_kind::variable), walk_([v] {
          return std::vector<std::pair<std::string, any_variable>>{{"", v}};
        }) {}
  /// An optimizer: its step counter and its slots, saved under `name`.
  template <optimizer_type O>
  trackable(std::string name, const O& opt)  // NOLINT
      : name_(std::move(name)), kind_(trackable_kind::optimizer), optimizer_(std::make_shared<O>(opt)) {}
  /// A model: each variable nn::named_variables finds, saved under `name`/<its path>.
  template <class M>
  requires(!optimizer_type<M> && !impl::is_variable<M>::value) trackable(std::string name, const M& model)  // NOLINT
      : name_(std::move(name)), kind_(trackable_kind::model), walk_([model] {
          std::vector<std::pair<std::string, any_variable>> out;
          for (nn::named_variable& v : nn::named_variables(model))
            std::visit([&](const auto& x) { out.emplace_back(std::move(v.name), x); }, v.value);
          return out;
        }) {
    static_assert(
        !std::is_arithmetic_v<M> && !std::is_convertible_v<const M&, std::string_view> && !impl::is_tensor<M>::value,
        "fg::train::checkpoint: a checkpoint tracks fg::variables, models and optimizers; hold a number or "
        "a tensor in an fg::variable to save it");
  }

  /// The name it is saved under.
  const std::string& name() const noexcept { return name_; }
  /// What it holds.
  trackable_kind kind() const noexcept { return kind_; }
  /// Its variables now, each with its path within the object ("" for a variable, "dense/kernel"
  /// in a model); empty for an optimizer.
  std::vector<std::pair<std::string, any_variable>> variables() const {
    return walk_ ? walk_() : std::vector<std::pair<std::string, any_variable>>{};
  }
  /// The optimizer it holds (a handle to the one given), or null.
  optimizers::optimizer* optimizer() const noexcept { return optimizer_.get(); }

 private:
  std::string name_;
  trackable_kind kind_;
  std::function<std::vector<std::pair<std::string, any_variable>>()> walk_;
  std::shared_ptr<optimizers::optimizer> optimizer_;
};
}  // namespace fusegrad::train
