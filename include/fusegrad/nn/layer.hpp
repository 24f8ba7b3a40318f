#pragma once
/// \file fg::nn::layer, what every Keras layer of fg::nn shares: a name, and variables made on
/// the first call from the input's shape (Keras' build), checked on every later call. A layer is
/// a handle, as fg::variable is: a copy is the same layer with the same variables, so a layer
/// called twice, or held by two models, has one set of variables. Layers hold variables and
/// call fg:: ops; they run no kernel of their own. Not meant to be built from several threads at
/// once (a built layer may be called from any number).

#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "../autodiff/variable.hpp"
#include "../eager/evaluate.hpp"
#include "initializers.hpp"
#include "regularizers.hpp"

namespace fusegrad::nn {

/// A variable of a layer or a model, float32 or float64.
using any_variable = std::variant<variable<float>, variable<double>>;
/// A variable and its name: "kernel" within its layer; "dense1/kernel" as a model's walk finds it
/// (nn::named_variables, nn/model.hpp); and its regularizer (none unless the layer was given one).
struct named_variable {
  std::string name;
  any_variable value;
  regularizers::regularizer regularizer = {};
  bool trainable() const {
    return std::visit([](const auto& v) { return v.trainable(); }, value);
  }
  fg::shape shape() const {
    return std::visit([](const auto& v) { return v.shape(); }, value);
  }
};

// Note [deferred restore]: weights loaded onto a layer that has not been called yet (it has no
// variables) cannot be assigned, so, as TensorFlow defers a restore, they wait in the layer's
// shared state (defer_weights) and its first call assigns them to the variables it makes, before
// it computes anything. They are checked then: each variable made takes the value of its name
// (or, for a value without a name, of its place in the layer's order: Keras' .weights.h5 numbers
// them), of the same element type and shape, and every value goes to a variable. Otherwise the
// call throws (shape_error when only shapes differ) naming the layer, the input's shape and each
// difference; the layer stays unbuilt (the variables just made are dropped) and the values keep
// waiting. Loading again before the first call replaces them.

/// A value waiting for a variable that a layer has not made yet (Note [deferred restore]).
struct deferred_weight {
  std::string name = {};  ///< the variable's name within the layer ("kernel"); "" to go by index
  std::size_t index = 0;  ///< the variable's place in the layer's order, when name is ""
  std::variant<tensor<float>, tensor<double>> value = {};
  std::string origin = {};  ///< where the value came from, for errors: "'a.weights.h5': 'dense/kernel'"
};

class layer {
 public:
  virtual ~layer() = default;
  /// The layer's name: the one given, else Keras' name for its type ("dense").
  const std::string& name() const noexcept { return s_->name; }
  /// Keras' class name ("Dense"), as summary() prints it.
  virtual std::string type_name() const = 0;
  /// Whether the first call has made the layer's variables.
  bool built() const noexcept { return s_->built; }
  /// The layer's variables in Keras' order (a dense layer's kernel, then its bias), named within
  /// the layer ("kernel", "bias"); empty before the first call. A model made of layers (a
  /// sequential) lists its layers' variables, named by layer ("dense_1/kernel").
  virtual std::vector<named_variable> weights() const { return s_->weights; }
  /// The number of elements of its variables (summary's Param #).
  std::size_t count_params() const {
    std::size_t n = 0;
    for (const named_variable& w : weights()) n += w.shape().elements();
    return n;
  }
  /// The shape of what its last call returned (empty before the first call).
  const fg::shape& output_shape() const noexcept { return s_->output_shape; }
  /// Values the first call is to give the variables it makes (Note [deferred restore]); they
  /// replace any given before. `values` may be empty: then the layer must make no variable. An
  /// error on a built layer (assign its variables instead). A layer is a handle: every copy
  /// shares them.
  void defer_weights(std::vector<deferred_weight> values) const {
    FG_CHECK(!s_->built, value_error, "fg::nn::", type_name(), " '", name(),
             "': defer_weights on a built layer; assign its variables instead");
    s_->deferred = std::move(values);
  }
  /// Whether values wait for the first call (Note [deferred restore]).
  bool has_deferred_weights() const noexcept { return s_->deferred.has_value(); }

 protected:
  explicit layer(std::string name) : s_(std::make_shared<state>()) { s_->name = std::move(name); }

  /// Makes the layer's variable `name` of shape s from `init` (on the first call only),
  /// regularized by `reg`.
  template <class T>
  variable<T> add_weight(const std::string& name, const fg::shape& s, const initializers::initializer& init,
                         bool trainable = true, const regularizers::regularizer& reg = {}) {
    variable<T> v(init.template operator()<T>(s), s_->name + "/" + name, trainable);
    s_->weights.push_back({name, v, reg});
    return v;
  }
  /// The layer's i-th variable, of element type T (a float64 call of a float32 layer is an
  /// error naming the layer).
  template <class T>
  variable<T> weight(std::size_t i) const {
    const auto* v = std::get_if<variable<T>>(&s_->weights.at(i).value);
    FG_CHECK(v, value_error, "fg::nn::", type_name(), " '", name(), "': called on ", dtype_name<T>(),
             " input, but its variables were made for ", dtype_name<T>() == std::string("float32") ? "float64" : "float32",
             " input by its first call");
    return *v;
  }
  /// Marks the layer built by its first call on input of shape s (after its variables are made),
  /// first giving them the values that wait for them (Note [deferred restore]).
  void set_built(const fg::shape& s) {
    if (s_->deferred) assign_deferred(s);
    s_->built = true;
    s_->input_shape = s;
  }
  /// The shape of the input the first call saw.
  const fg::shape& built_input_shape() const noexcept { return s_->input_shape; }
  void set_output_shape(const fg::shape& s) { s_->output_shape = s; }
  template <class T>
  static const char* dtype_name() {
    return std::is_same_v<T, float> ? "float32" : "float64";
  }

 private:
  struct state {
    std::string name;
    bool built = false;
    fg::shape input_shape, output_shape;
    std::vector<named_variable> weights;
    std::optional<std::vector<deferred_weight>> deferred;  ///< Note [deferred restore]
  };
  std::shared_ptr<state> s_;

  /// Checks the waiting values against the variables just made and assigns them, or drops the
  /// variables and throws (Note [deferred restore]).
  void assign_deferred(const fg::shape& input) {
    const std::vector<deferred_weight>& values = *s_->deferred;
    std::vector<std::size_t> taken_by(s_->weights.size(), values.size());
    std::vector<bool> used(values.size(), false);
    std::vector<std::string> problems;
    bool shapes_only = true;
    const auto type_of = [](std::size_t variant_index) { return variant_index == 0 ? "float32" : "float64"; };
    for (std::size_t i = 0; i < s_->weights.size(); ++i) {
      const named_variable& w = s_->weights[i];
      std::size_t j = 0;
      while (j < values.size() && (used[j] || (values[j].name.empty() ? values[j].index != i : values[j].name != w.name)))
        ++j;
      if (j == values.size()) {
        problems.push_back("'" + w.name + "' (" + type_of(w.value.index()) + ", shape " + w.shape().str() +
                           ") has no value loaded");
        shapes_only = false;
        continue;
      }
      used[j] = true;
      const fg::shape vs = std::visit([](const auto& t) { return t.shape(); }, values[j].value);
      if (values[j].value.index() != w.value.index()) {
        problems.push_back("'" + w.name + "' is " + type_of(w.value.index()) + " here but " +
                           type_of(values[j].value.index()) + " in " + values[j].origin);
        shapes_only = false;
      } else if (vs != w.shape()) {
        problems.push_back("'" + w.name + "' has shape " + w.shape().str() + " here but " + vs.str() + " in " +
                           values[j].origin);
      } else {
        taken_by[i] = j;
      }
    }
    for (std::size_t j = 0; j < values.size(); ++j)
      if (!used[j]) {
        problems.push_back(values[j].origin + " matches no variable of the layer (it makes " +
                           std::to_string(s_->weights.size()) + ")");
        shapes_only = false;
      }
    if (!problems.empty()) {
      s_->weights.clear();
      std::string list;
      for (std::size_t k = 0; k < problems.size(); ++k) list += (k ? "; " : "") + problems[k];
      const std::string what = "fg::nn::" + type_name() + " '" + name() + "': the weights loaded before its first call " +
                               "do not fit the variables it makes for input of shape " + input.str() +
                               ", nothing was assigned (the layer stays unbuilt): " + list;
      if (shapes_only) throw shape_error(what);
      FG_CHECK(false, value_error, what);
    }
    for (std::size_t i = 0; i < s_->weights.size(); ++i)
      std::visit(
          [&](auto& v) {
            using T = typename std::decay_t<decltype(v)>::value_type;
            v.assign(std::get<tensor<T>>(values[taken_by[i]].value).to(v.peek().device()));
          },
          s_->weights[i].value);
    s_->deferred.reset();
  }
};

/// The call operator of a layer type D, from D's
/// `template <class T> tensor<T> forward(const tensor<T>& x, bool training)`. (No virtual call:
/// a virtual member of a class template is compiled with the class, so every unit that includes
/// a layer's header would compile its forward pass for both element types; a sequential keeps
/// a call of each layer's own type instead, made when the layer is added.)
template <class D>
class layer_of : public layer {
 public:
  /// The layer on x (a tensor or an expression); `training` switches dropout and batch
  /// normalization to their training behaviour.
  template <tensor_like X, class T = value_type_of<X>>
  tensor<T> operator()(const X& x, bool training = false) {
    static_assert(std::is_floating_point_v<T>, "fg::nn: layers take float or double input; convert with fg::cast");
    tensor<T> y = static_cast<D*>(this)->forward(tensor<T>(eval(x)), training);
    set_output_shape(y.shape());
    return y;
  }

 protected:
  using layer::layer;
};

/// Whether L is a layer of fg::nn.
template <class L>
concept layer_type = std::derived_from<std::remove_cvref_t<L>, layer>;
}  // namespace fusegrad::nn
