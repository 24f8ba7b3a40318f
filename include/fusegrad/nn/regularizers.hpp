#pragma once
/// \file fg::nn::regularizers: Keras 3's weight regularizers, l1(factor) = factor * sum(|w|),
/// l2(factor) = factor * sum(w^2) and l1_l2(l1, l2), their sum, taken by a layer's
/// kernel_regularizer, bias_regularizer or embeddings_regularizer option as an object or by
/// Keras' name ("l1", "l2": factor 0.01; "l1_l2": both 0.01, as Keras' documentation gives it).
/// A regularized variable adds its term to the model's regularization losses
/// (nn::regularization_losses, nn/model.hpp; a model's losses()), which fit and evaluate add to
/// the loss, as Keras' compiled loss does. Each term is computed from the variable's current
/// value when asked for, so under a tape its gradient flows to the variable.

#include <cmath>
#include <string>

#include "../eager/evaluate.hpp"
#include "../eager/reduce.hpp"
#include "../eval/creation.hpp"
#include "../ops/unary.hpp"

namespace fusegrad::nn::regularizers {

/// A weight regularizer: none (a layer's default), l1, l2 or l1_l2 with their factors.
class regularizer {
 public:
  /// No regularizer: the variable adds no loss.
  regularizer() = default;
  /// The regularizer Keras names `name` with its default factors: "l1" (0.01), "l2" (0.01),
  /// "l1_l2" (0.01 and 0.01).
  regularizer(const char* name) : regularizer(std::string(name)) {}  // NOLINT: Keras passes names
  regularizer(const std::string& name) {                              // NOLINT
    if (name == "l1") *this = make(kind::l1, 0.01, 0, "l1");
    else if (name == "l2") *this = make(kind::l2, 0, 0.01, "l2");
    else if (name == "l1_l2") *this = make(kind::l1_l2, 0.01, 0.01, "l1_l2");
    else
      throw value_error("fg::nn::regularizers: unknown regularizer '" + name + "'; Keras' names: l1, l2, l1_l2");
  }
  /// factor * sum(|w|) (Keras' L1).
  static regularizer l1(double factor) { return make(kind::l1, factor, 0, "l1"); }
  /// factor * sum(w^2) (Keras' L2).
  static regularizer l2(double factor) { return make(kind::l2, 0, factor, "l2"); }
  /// l1 * sum(|w|) + l2 * sum(w^2), a term left out when its factor is 0 (Keras' L1L2).
  static regularizer l1_l2(double l1, double l2) { return make(kind::l1_l2, l1, l2, "l1_l2"); }

  /// Whether it adds a loss (a regularizer with factor 0 adds one of 0, as in Keras).
  explicit operator bool() const noexcept { return kind_ != kind::none; }
  double l1_factor() const noexcept { return l1_; }
  double l2_factor() const noexcept { return l2_; }

  /// The regularization of w (a tensor, a variable or an expression), a scalar of its element
  /// type, recorded on the tapes that watch w.
  template <tensor_like X, class T = value_type_of<X>>
  tensor<T> operator()(const X& w) const {
    static_assert(std::is_floating_point_v<T>, "fg::nn::regularizers: a regularizer takes float or double weights");
    return penalty(tensor<T>(w));
  }
  /// The regularization of w (its body: compiled once per element type, Note [shared layer code]).
  template <class T>
  tensor<T> penalty(const tensor<T>& w) const;

 private:
  enum class kind { none, l1, l2, l1_l2 };
  static regularizer make(kind k, double l1, double l2, const char* who) {
    auto fine = [](double f) { return std::isfinite(f) && f >= 0; };
    if (k == kind::l1_l2)
      FG_CHECK(fine(l1) && fine(l2), value_error,
               "fg::nn::regularizers::l1_l2: factors must be finite and at least 0, got l1 = ", l1, " and l2 = ", l2);
    else
      FG_CHECK(fine(l1) && fine(l2), value_error, "fg::nn::regularizers::", who,
               ": the factor must be finite and at least 0, got ", k == kind::l1 ? l1 : l2);
    regularizer r;
    r.kind_ = k;
    r.l1_ = l1;
    r.l2_ = l2;
    return r;
  }
  kind kind_ = kind::none;
  double l1_ = 0, l2_ = 0;
};

template <class T>
tensor<T> regularizer::penalty(const tensor<T>& w) const {
  switch (kind_) {
    case kind::none: break;
    case kind::l1: return tensor<T>(static_cast<T>(l1_) * reduce_sum(fusegrad::abs(w)));
    case kind::l2: return tensor<T>(static_cast<T>(l2_) * reduce_sum(fusegrad::square(w)));
    case kind::l1_l2:
      if (l1_ != 0 && l2_ != 0)
        return tensor<T>(static_cast<T>(l1_) * reduce_sum(fusegrad::abs(w)) +
                         static_cast<T>(l2_) * reduce_sum(fusegrad::square(w)));
      if (l1_ != 0) return tensor<T>(static_cast<T>(l1_) * reduce_sum(fusegrad::abs(w)));
      if (l2_ != 0) return tensor<T>(static_cast<T>(l2_) * reduce_sum(fusegrad::square(w)));
      break;
  }
  return fusegrad::zeros<T>(fg::shape{});
}
#if defined(FUSEGRAD_SEPARATE_ENGINES) && !defined(FUSEGRAD_DEVICE)  // compiled in src/nn.cpp (Note [shared layer code])
extern template tensor<float> regularizer::penalty<float>(const tensor<float>&) const;
extern template tensor<double> regularizer::penalty<double>(const tensor<double>&) const;
#endif

/// factor * sum(|w|): Keras' regularizers.l1 (L1).
inline regularizer l1(double factor = 0.01) { return regularizer::l1(factor); }
/// factor * sum(w^2): Keras' regularizers.l2 (L2).
inline regularizer l2(double factor = 0.01) { return regularizer::l2(factor); }
/// l1 * sum(|w|) + l2 * sum(w^2): Keras' regularizers.l1_l2 (L1L2), both factors given.
inline regularizer l1_l2(double l1, double l2) { return regularizer::l1_l2(l1, l2); }
}  // namespace fusegrad::nn::regularizers
