#pragma once
/// \file fg::nn::layer, what every Keras layer of fg::nn shares: a name, and variables made on
/// the first call from the input's shape (Keras' build), checked on every later call. A layer is
/// a handle, as fg::variable is: a copy is the same layer with the same variables, so a layer
/// called twice, or held by two models, has one set of variables. Layers hold variables and
/// call fg:: ops; they run no kernel of their own. Not meant to be built from several threads at
/// once (a built layer may be called from any number).

#include <memory>
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
  /// Marks the layer built by its first call on input of shape s (after its variables are made).
  void set_built(const fg::shape& s) {
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
  };
  std::shared_ptr<state> s_;
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
