#pragma once
/// \file fg::nn::sequential: Keras' Sequential, layers applied in order (given in braces or
/// added with add) to float32 input, or to integer indices (int32 or int64) when its first layer
/// takes them (an embedding). Each layer is held as a handle, so the layers given and the
/// sequential share their variables; within the sequential a layer is named by Keras' rule, its
/// own name made unique by a suffix ("dense", "dense_1", ...), and its variables by that name
/// ("dense_1/kernel"). A sequential is itself a layer, so it nests. summary() prints TensorFlow
/// 2's table; compile, fit, evaluate and predict are Keras' (nn/fit.hpp).

#include <cstdint>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "fit.hpp"
#include "layer.hpp"
#include "summary.hpp"

namespace fusegrad::nn {

class sequential : public layer_of<sequential>, public keras_model<sequential> {
 public:
  sequential() : layer_of("sequential"), seq_(std::make_shared<state>()) {}
  /// The layers, in order: any of fg::nn's layers, as values (a copy is the same layer).
  template <layer_type... L>
  explicit sequential(const L&... layers) : sequential() {
    (add(layers), ...);
  }
  std::string type_name() const override { return "Sequential"; }

  /// Appends a layer (the same layer: it shares its variables with the one given).
  template <layer_type L>
  sequential& add(const L& l) {
    std::string name = l.name();
    int suffix = 0;
    auto taken = [&](const std::string& n) {
      for (const std::string& m : seq_->names)
        if (m == n) return true;
      return false;
    };
    while (taken(name)) name = l.name() + "_" + std::to_string(++suffix);
    auto held = std::make_shared<L>(l);
    if constexpr (requires { L::takes_indices; }) {
      if (seq_->layers.empty()) {
        seq_->index32 = [held](const tensor<std::int32_t>& x, bool training) { return (*held)(x, training); };
        seq_->index64 = [held](const tensor<std::int64_t>& x, bool training) { return (*held)(x, training); };
      }
    }
    seq_->layers.push_back(held);
    seq_->calls.push_back([held](const tensor<float>& x, bool training) { return (*held)(x, training); });
    seq_->names.push_back(std::move(name));
    return *this;
  }
  /// The layers and their names within the sequential.
  std::size_t size() const noexcept { return seq_->layers.size(); }
  layer& operator[](std::size_t i) const { return *seq_->layers.at(i); }
  const std::string& layer_name(std::size_t i) const { return seq_->names.at(i); }

  /// Says an enclosing sequential to pass integer input to this one when it comes first.
  static constexpr bool takes_indices = true;

  /// Float input: the layers in order.
  using layer_of::operator();
  /// Integer indices: the first layer's lookup (an embedding's), then the other layers in order;
  /// an error naming the first layer when it takes no indices.
  template <eager::gather_index I>
  tensor<float> operator()(const tensor<I>& x, bool training = false) {
    const auto& first = [&]() -> const auto& {
      if constexpr (std::is_same_v<I, std::int32_t>) return seq_->index32;
      else return seq_->index64;
    }();
    FG_CHECK(first, value_error, "fg::nn::sequential '", name(), "': called on ",
             std::is_same_v<I, std::int32_t> ? "int32" : "int64", " input, but ",
             seq_->layers.empty() ? std::string("it has no layers")
                                  : "its first layer '" + seq_->names[0] + "' (" + seq_->layers[0]->type_name() +
                                        ") takes float input",
             "; integer indices go to a sequential whose first layer is an embedding (else use fg::cast<float>)");
    tensor<float> y = first(x, training);
    for (std::size_t i = 1; i < seq_->calls.size(); ++i) y = seq_->calls[i](y, training);
    set_output_shape(y.shape());
    return y;
  }

  /// The layers in order (float32, as Keras' models are by default).
  template <class T>
  tensor<T> forward(const tensor<T>& x, bool training) {
    static_assert(std::is_same_v<T, float>, "fg::nn::sequential runs float32 input; cast with fg::cast<float>");
    tensor<T> y = x;
    for (const auto& call : seq_->calls) y = call(y, training);
    return y;
  }
  /// Every layer's variables, named by the layer ("dense_1/kernel"), in order.
  std::vector<named_variable> weights() const override {
    std::vector<named_variable> out;
    for (std::size_t i = 0; i < seq_->layers.size(); ++i)
      for (const named_variable& w : seq_->layers[i]->weights())
        out.push_back({seq_->names[i] + "/" + w.name, w.value, w.regularizer});
    return out;
  }

  /// TensorFlow 2's summary table: each layer's name and type, output shape (the batch axis as
  /// None) and parameter count, then the totals. The output shapes are those of the last call.
  void summary(std::ostream& os = std::cout) const {
    std::vector<std::pair<std::string, const layer*>> rows;
    for (std::size_t i = 0; i < seq_->layers.size(); ++i) rows.emplace_back(seq_->names[i], seq_->layers[i].get());
    impl::summary_table(os, name(), rows);
  }
  /// summary()'s text.
  std::string summary_text() const {
    std::ostringstream os;
    summary(os);
    return os.str();
  }

 private:
  struct state {
    std::vector<std::shared_ptr<layer>> layers;  ///< each a copy of the handle given (the same layer)
    std::vector<std::function<tensor<float>(const tensor<float>&, bool)>> calls;  ///< each layer's own call
    /// The first layer's call on indices, when it takes them (an embedding).
    std::function<tensor<float>(const tensor<std::int32_t>&, bool)> index32;
    std::function<tensor<float>(const tensor<std::int64_t>&, bool)> index64;
    std::vector<std::string> names;
  };
  std::shared_ptr<state> seq_;
};

/// A sequential's fit, evaluate and predict, compiled once in libfusegrad in package mode (Note
/// [shared layer code], src/nn.cpp): P is `extern` here, empty there.
#define FG_SHARED_SEQUENTIAL(P, X)                                                                         \
  P template history keras_model<sequential>::run_fit<X>(const tensor<X>&, const target&, fit_options);   \
  P template logs keras_model<sequential>::run_evaluate<X>(const tensor<X>&, const target&, evaluate_options); \
  P template tensor<float> keras_model<sequential>::run_predict<X>(const tensor<X>&, evaluate_options);
#if defined(FUSEGRAD_SEPARATE_ENGINES) && !defined(FUSEGRAD_DEVICE)
FG_SHARED_SEQUENTIAL(extern, float)
FG_SHARED_SEQUENTIAL(extern, std::int32_t)
FG_SHARED_SEQUENTIAL(extern, std::int64_t)
#endif
}  // namespace fusegrad::nn

// fit's weight sites (nn::callbacks::training_context::sites) walk sequentials: defined once the
// class is complete.
#include "weight_sites.hpp"  // IWYU pragma: export
