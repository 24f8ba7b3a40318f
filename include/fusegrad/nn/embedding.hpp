#pragma once
/// \file fg::nn::embedding: Keras' Embedding, the rows of an embeddings variable of shape
/// (input_dim, output_dim) picked by integer indices (tensor<int32_t> or tensor<int64_t>, any
/// shape): the result has shape indices.shape + (output_dim), float32 (lookup<double> for
/// float64). The embeddings are made on the first call from embeddings_initializer (Keras' default
/// "uniform": uniform in [-0.05, 0.05)); the lookup is fg::gather, whose gradient adds each row of
/// the output's gradient to the row it came from (a dense gradient; repeated indices add up). An
/// index outside [0, input_dim) is an error naming the layer, the index and input_dim, raised
/// before anything changes (Keras' TensorFlow backend wraps negative indices; fusegrad, as
/// tf.gather, does not). Float input is cast to int32 first, as Keras does. Keras' mask_zero is
/// not offered.

#include <cstdint>
#include <string>

#include "../eager/indexing.hpp"
#include "layer.hpp"

namespace fusegrad::nn {

/// Embedding's options (Keras' defaults).
struct embedding_options {
  /// Keras' "uniform": random_uniform in [-0.05, 0.05).
  initializers::initializer embeddings_initializer = initializers::random_uniform();
  regularizers::regularizer embeddings_regularizer = {};  ///< none, or l1 / l2 / l1_l2
  std::string name = "embedding";
};

class embedding : public layer_of<embedding> {
 public:
  /// Tells nn::sequential to pass integer input to this layer when it comes first.
  static constexpr bool takes_indices = true;

  /// A lookup of input_dim rows of output_dim values.
  embedding(std::int64_t input_dim, std::int64_t output_dim, embedding_options o = {})
      : layer_of(o.name), input_dim_(input_dim), output_dim_(output_dim), o_(std::move(o)) {
    FG_CHECK(input_dim > 0 && output_dim > 0, value_error,
             "fg::nn::embedding: input_dim and output_dim must be positive, got ", input_dim, " and ", output_dim);
  }
  std::string type_name() const override { return "Embedding"; }
  std::int64_t input_dim() const noexcept { return input_dim_; }
  std::int64_t output_dim() const noexcept { return output_dim_; }

  /// The embeddings' rows at `indices`, float32: shape indices.shape + (output_dim).
  template <eager::gather_index I>
  tensor<float> operator()(const tensor<I>& indices, bool /*training*/ = false) {
    return lookup<float>(indices);
  }
  /// Float input, cast to int32 first (Keras' rule); the result has the input's element type.
  using layer_of::operator();

  /// The embeddings' rows at `indices`, of element type T (the first call fixes it).
  template <class T = float, eager::gather_index I>
  tensor<T> lookup(const tensor<I>& indices) {
    static_assert(std::is_floating_point_v<T>, "fg::nn::embedding: the embeddings are float or double");
    check(indices);
    if (!built()) {
      add_weight<T>("embeddings", {static_cast<std::size_t>(input_dim_), static_cast<std::size_t>(output_dim_)},
                    o_.embeddings_initializer, true, o_.embeddings_regularizer);
      set_built(indices.shape());
    }
    FG_CHECK(std::holds_alternative<variable<T>>(weights()[0].value), value_error, "fg::nn::embedding '", name(),
             "': asked for ", dtype_name<T>(), " embeddings, but its first call made them ",
             std::is_same_v<T, float> ? "float64" : "float32");
    tensor<T> y = gather(weight<T>(0), indices, 0);
    set_output_shape(y.shape());
    return y;
  }

  /// The lookup of float input cast to int32 (what layer_of's call operator runs).
  template <class T>
  tensor<T> forward(const tensor<T>& x, bool /*training*/) {
    return lookup<T>(tensor<std::int32_t>(cast<std::int32_t>(x)));
  }

 private:
  template <class I>
  void check(const tensor<I>& indices) const {
    const tensor<I> h = indices.device().is_cpu() ? indices : indices.cpu();
    const I* ix = h.data();
    for (std::size_t j = 0; j < h.size(); ++j)
      FG_CHECK(ix[j] >= 0 && ix[j] < input_dim_, index_error, "fg::nn::embedding '", name(), "': index ", ix[j],
               " (element ", j, " of indices of shape ", h.shape(), ") is out of range for input_dim ", input_dim_,
               " (valid: 0 to ", input_dim_ - 1, ")");
  }
  std::int64_t input_dim_, output_dim_;
  embedding_options o_;
};
}  // namespace fusegrad::nn
