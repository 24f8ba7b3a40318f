#pragma once
/// \file fg::nn::losses: Keras 3's losses. An object of Keras' name,
/// `losses::sparse_categorical_crossentropy loss({.from_logits = true})`, called as
/// loss(y_true, y_pred) or loss(y_true, y_pred, sample_weight), computes the loss of each sample
/// (the mean or sum over the last axis: one value per row, as Keras' loss functions give), which
/// `losses::per_sample::sparse_categorical_crossentropy(y_true, y_pred, from_logits)` returns,
/// multiplies them by the sample weights when given, and reduces them: `sum_over_batch_size`
/// (Keras' default: the sum divided by the number of per-sample values, whatever the weights),
/// `sum`, or `none`.
/// The cross-entropies from logits go through tf.nn's fused ops (stable at logits of +-1e4);
/// from probabilities they clip to [1e-7, 1 - 1e-7] as Keras does. Every loss is differentiable
/// to any order with respect to y_pred.

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "../eager/cross_entropy.hpp"
#include "../eager/evaluate.hpp"
#include "../eager/reduce.hpp"
#include "../eager/reshape.hpp"
#include "../eager/softmax.hpp"
#include "../ops/binary.hpp"
#include "../ops/unary.hpp"

namespace fusegrad::nn::losses {

/// How an object reduces the per-sample losses (Keras' reduction names).
enum class reduction { sum_over_batch_size, sum, none };

/// Keras' fuzz factor, the clip of probabilities away from 0 and 1.
inline constexpr double epsilon = 1e-7;

namespace impl {
template <class T>
void check_same_shape(const char* loss, const fg::shape& t, const fg::shape& p) {
  FG_CHECK(t == p, shape_error, "fg::nn::losses::", loss, ": y_true of shape ", t, " and y_pred of shape ", p,
           " must have the same shape");
}
template <class T>
void check_rank(const char* loss, const fg::shape& p) {
  FG_CHECK(p.rank() >= 1, shape_error, "fg::nn::losses::", loss, ": y_pred must have rank at least 1 (a batch), got ",
           "shape ", p);
}
/// The shape (n, 1, ..., 1) of a batch's weights against per-sample losses of shape s.
inline std::vector<long> core_shape_for(const fg::shape& s) {
  std::vector<long> d(s.rank(), 1);
  d[0] = static_cast<long>(s[0]);
  return d;
}
/// Per-sample losses weighted and reduced as `r` says (Keras' reduce_weighted_values).
template <class T>
tensor<T> reduce(const char* loss, const tensor<T>& per_sample, const tensor<T>* weight, reduction r) {
  tensor<T> values = per_sample;
  if (weight) {
    FG_CHECK(weight->shape() == per_sample.shape() || weight->size() == 1 ||
                 (weight->shape().rank() >= 1 && per_sample.shape().rank() >= 1 &&
                  weight->shape()[0] == per_sample.shape()[0] && weight->size() == per_sample.shape()[0]),
             shape_error, "fg::nn::losses::", loss, ": sample_weight of shape ", weight->shape(),
             " does not match the per-sample losses of shape ", per_sample.shape());
    const tensor<T> w = weight->shape() == per_sample.shape() || weight->size() == 1
                            ? *weight
                            : tensor<T>(fusegrad::reshape(*weight, core_shape_for(per_sample.shape())));
    values = tensor<T>(per_sample * w);
  }
  switch (r) {
    case reduction::none: return values;
    case reduction::sum: return reduce_sum(values);
    case reduction::sum_over_batch_size: break;
  }
  if (values.size() == 0) return tensor<T>(T(0));
  return tensor<T>(reduce_sum(values) / static_cast<T>(values.size()));
}
}  // namespace impl

// ---- The losses of each sample (of each row of the last axis).
namespace per_sample {

/// mean((y_pred - y_true)^2) over the last axis.
template <tensor_like Y, tensor_like P, class T = value_type_of<P>>
tensor<T> mean_squared_error(const Y& y_true, const P& y_pred) {
  impl::check_same_shape<T>("mean_squared_error", y_true.shape(), y_pred.shape());
  impl::check_rank<T>("mean_squared_error", y_pred.shape());
  return reduce_mean(square(y_pred - y_true), -1);
}
/// mean(|y_pred - y_true|) over the last axis.
template <tensor_like Y, tensor_like P, class T = value_type_of<P>>
tensor<T> mean_absolute_error(const Y& y_true, const P& y_pred) {
  impl::check_same_shape<T>("mean_absolute_error", y_true.shape(), y_pred.shape());
  impl::check_rank<T>("mean_absolute_error", y_pred.shape());
  return reduce_mean(abs(y_pred - y_true), -1);
}
/// Huber's loss: 0.5 e^2 where |e| <= delta, delta |e| - 0.5 delta^2 beyond; mean over the last axis.
template <tensor_like Y, tensor_like P, class T = value_type_of<P>>
tensor<T> huber(const Y& y_true, const P& y_pred, double delta = 1.0) {
  impl::check_same_shape<T>("huber", y_true.shape(), y_pred.shape());
  impl::check_rank<T>("huber", y_pred.shape());
  const tensor<T> e = y_pred - y_true;
  const T d = static_cast<T>(delta), half = T(0.5);
  return reduce_mean(where(abs(e) <= d, half * square(e), d * abs(e) - half * d * d), -1);
}
/// sum(y_true log(y_true / y_pred)) over the last axis, both clipped to [1e-7, 1].
template <tensor_like Y, tensor_like P, class T = value_type_of<P>>
tensor<T> kl_divergence(const Y& y_true, const P& y_pred) {
  impl::check_same_shape<T>("kl_divergence", y_true.shape(), y_pred.shape());
  impl::check_rank<T>("kl_divergence", y_pred.shape());
  const T eps = static_cast<T>(epsilon);
  const tensor<T> t = clip_by_value(y_true, eps, T(1)), p = clip_by_value(y_pred, eps, T(1));
  return reduce_sum(t * log(t / p), -1);
}
/// Binary cross-entropy, mean over the last axis; from logits through
/// sigmoid_cross_entropy_with_logits, else -(t log(p) + (1 - t) log(1 - p)), p clipped.
template <tensor_like Y, tensor_like P, class T = value_type_of<P>>
tensor<T> binary_crossentropy(const Y& y_true, const P& y_pred, bool from_logits = false, double label_smoothing = 0) {
  impl::check_same_shape<T>("binary_crossentropy", y_true.shape(), y_pred.shape());
  impl::check_rank<T>("binary_crossentropy", y_pred.shape());
  tensor<T> t = y_true;
  if (label_smoothing > 0) t = tensor<T>(t * static_cast<T>(1 - label_smoothing) + static_cast<T>(0.5 * label_smoothing));
  if (from_logits) return reduce_mean(sigmoid_cross_entropy_with_logits(t, y_pred), -1);
  const T eps = static_cast<T>(epsilon);
  const tensor<T> p = clip_by_value(y_pred, eps, T(1) - eps);
  return reduce_mean(-(t * log(p) + (T(1) - t) * log(T(1) - p)), -1);
}
/// Categorical cross-entropy over the last axis (one-hot or soft labels); from logits through
/// softmax_cross_entropy_with_logits, else -sum(t log(p)), p normalised to sum 1 and clipped.
template <tensor_like Y, tensor_like P, class T = value_type_of<P>>
tensor<T> categorical_crossentropy(const Y& y_true, const P& y_pred, bool from_logits = false,
                                   double label_smoothing = 0) {
  impl::check_same_shape<T>("categorical_crossentropy", y_true.shape(), y_pred.shape());
  impl::check_rank<T>("categorical_crossentropy", y_pred.shape());
  tensor<T> t = y_true;
  if (label_smoothing > 0) {
    const auto classes = static_cast<double>(y_pred.shape()[y_pred.shape().rank() - 1]);
    t = tensor<T>(t * static_cast<T>(1 - label_smoothing) + static_cast<T>(label_smoothing / classes));
  }
  if (from_logits) return softmax_cross_entropy_with_logits(t, y_pred);
  const T eps = static_cast<T>(epsilon);
  const tensor<T> q = y_pred;
  const tensor<T> p = clip_by_value(q / reduce_sum(q, -1, true), eps, T(1) - eps);
  return reduce_sum(-(t * log(p)), -1);
}
/// Cross-entropy of integer class labels (one fewer axis than y_pred); from logits through
/// sparse_softmax_cross_entropy_with_logits, else of log(p), p clipped (Keras' arithmetic).
/// A label out of range is an error naming the row and the label.
template <tensor_like L, tensor_like P, class T = value_type_of<P>>
tensor<T> sparse_categorical_crossentropy(const L& y_true, const P& y_pred, bool from_logits = false) {
  static_assert(std::is_integral_v<value_type_of<L>>,
                "fg::nn::losses::sparse_categorical_crossentropy: labels are class indices (int32 or int64)");
  impl::check_rank<T>("sparse_categorical_crossentropy", y_pred.shape());
  if (from_logits) return sparse_softmax_cross_entropy_with_logits(y_true, y_pred);
  const T eps = static_cast<T>(epsilon);
  return sparse_softmax_cross_entropy_with_logits(y_true, log(clip_by_value(y_pred, eps, T(1) - eps)));
}
}  // namespace per_sample

// ---- The objects: weighted and reduced.

/// The options of a loss object (Keras' defaults).
struct options {
  losses::reduction reduction = losses::reduction::sum_over_batch_size;
};
/// The options of the cross-entropies (Keras' defaults).
struct crossentropy_options {
  bool from_logits = false;
  double label_smoothing = 0;
  losses::reduction reduction = losses::reduction::sum_over_batch_size;
};
struct sparse_crossentropy_options {
  bool from_logits = false;
  losses::reduction reduction = losses::reduction::sum_over_batch_size;
};
struct huber_options {
  double delta = 1.0;
  losses::reduction reduction = losses::reduction::sum_over_batch_size;
};

/// A loss object: its per-sample function F, weighted and reduced. Called as
/// loss(y_true, y_pred) or loss(y_true, y_pred, sample_weight).
template <class F>
class loss_object {
 public:
  loss_object(const char* name, losses::reduction r, F f) : name_(name), r_(r), f_(std::move(f)) {}
  const char* name() const noexcept { return name_; }
  template <tensor_like Y, tensor_like P, class T = value_type_of<P>>
  tensor<T> operator()(const Y& y_true, const P& y_pred) const {
    const tensor<T>* unweighted = nullptr;
    return value(tensor<value_type_of<Y>>(eval(y_true)), tensor<T>(eval(y_pred)), unweighted);
  }
  template <tensor_like Y, tensor_like P, class T = value_type_of<P>>
  tensor<T> operator()(const Y& y_true, const P& y_pred, const tensor<T>& sample_weight) const {
    return value(tensor<value_type_of<Y>>(eval(y_true)), tensor<T>(eval(y_pred)), &sample_weight);
  }
  /// The loss of y_pred against y_true, weighted by *sample_weight where given, and reduced
  /// (compiled once per element types, Note [shared layer code]).
  template <class Y, class T>
  tensor<T> value(const tensor<Y>& y_true, const tensor<T>& y_pred, const tensor<T>* sample_weight) const;

 private:
  const char* name_;
  losses::reduction r_;
  F f_;
};

template <class F>
template <class Y, class T>
tensor<T> loss_object<F>::value(const tensor<Y>& y_true, const tensor<T>& y_pred, const tensor<T>* sample_weight) const {
  return impl::reduce<T>(name_, f_(y_true, y_pred), sample_weight, r_);
}

namespace impl {
struct mse_fn {
  template <class Y, class P>
  auto operator()(const Y& t, const P& p) const { return per_sample::mean_squared_error(t, p); }
};
struct mae_fn {
  template <class Y, class P>
  auto operator()(const Y& t, const P& p) const { return per_sample::mean_absolute_error(t, p); }
};
struct kld_fn {
  template <class Y, class P>
  auto operator()(const Y& t, const P& p) const { return per_sample::kl_divergence(t, p); }
};
struct huber_fn {
  double delta;
  template <class Y, class P>
  auto operator()(const Y& t, const P& p) const { return per_sample::huber(t, p, delta); }
};
struct bce_fn {
  bool from_logits;
  double smoothing;
  template <class Y, class P>
  auto operator()(const Y& t, const P& p) const { return per_sample::binary_crossentropy(t, p, from_logits, smoothing); }
};
struct cce_fn {
  bool from_logits;
  double smoothing;
  template <class Y, class P>
  auto operator()(const Y& t, const P& p) const { return per_sample::categorical_crossentropy(t, p, from_logits, smoothing); }
};
struct scce_fn {
  bool from_logits;
  template <class Y, class P>
  auto operator()(const Y& t, const P& p) const { return per_sample::sparse_categorical_crossentropy(t, p, from_logits); }
};
}  // namespace impl

/// Keras' MeanSquaredError.
class mean_squared_error : public loss_object<impl::mse_fn> {
 public:
  explicit mean_squared_error(options o = {}) : loss_object("mean_squared_error", o.reduction, {}) {}
};
/// Keras' MeanAbsoluteError.
class mean_absolute_error : public loss_object<impl::mae_fn> {
 public:
  explicit mean_absolute_error(options o = {}) : loss_object("mean_absolute_error", o.reduction, {}) {}
};
/// Keras' KLDivergence.
class kl_divergence : public loss_object<impl::kld_fn> {
 public:
  explicit kl_divergence(options o = {}) : loss_object("kl_divergence", o.reduction, {}) {}
};
/// Keras' Huber.
class huber : public loss_object<impl::huber_fn> {
 public:
  explicit huber(huber_options o = {}) : loss_object("huber", o.reduction, {o.delta}) {}
};
/// Keras' BinaryCrossentropy.
class binary_crossentropy : public loss_object<impl::bce_fn> {
 public:
  explicit binary_crossentropy(crossentropy_options o = {})
      : loss_object("binary_crossentropy", o.reduction, {o.from_logits, o.label_smoothing}) {}
};
/// Keras' CategoricalCrossentropy.
class categorical_crossentropy : public loss_object<impl::cce_fn> {
 public:
  explicit categorical_crossentropy(crossentropy_options o = {})
      : loss_object("categorical_crossentropy", o.reduction, {o.from_logits, o.label_smoothing}) {}
};
/// Keras' SparseCategoricalCrossentropy.
class sparse_categorical_crossentropy : public loss_object<impl::scce_fn> {
 public:
  static constexpr bool takes_class_indices = true;  ///< its targets are class indices
  explicit sparse_categorical_crossentropy(sparse_crossentropy_options o = {})
      : loss_object("sparse_categorical_crossentropy", o.reduction, {o.from_logits}) {}
};

/// The losses of float32 and float64 predictions, compiled once in libfusegrad in package mode
/// (Note [shared layer code], src/nn.cpp): P is `extern` here, empty there.
#define FG_SHARED_LOSSES(P, T)                                                                                      \
  P template tensor<T> loss_object<impl::mse_fn>::value(const tensor<T>&, const tensor<T>&, const tensor<T>*) const; \
  P template tensor<T> loss_object<impl::mae_fn>::value(const tensor<T>&, const tensor<T>&, const tensor<T>*) const; \
  P template tensor<T> loss_object<impl::kld_fn>::value(const tensor<T>&, const tensor<T>&, const tensor<T>*) const; \
  P template tensor<T> loss_object<impl::huber_fn>::value(const tensor<T>&, const tensor<T>&, const tensor<T>*)      \
      const;                                                                                                         \
  P template tensor<T> loss_object<impl::bce_fn>::value(const tensor<T>&, const tensor<T>&, const tensor<T>*) const; \
  P template tensor<T> loss_object<impl::cce_fn>::value(const tensor<T>&, const tensor<T>&, const tensor<T>*) const; \
  P template tensor<T> loss_object<impl::scce_fn>::value(const tensor<std::int64_t>&, const tensor<T>&,              \
                                                         const tensor<T>*) const;                                    \
  P template tensor<T> loss_object<impl::scce_fn>::value(const tensor<std::int32_t>&, const tensor<T>&,              \
                                                         const tensor<T>*) const;
#if defined(FUSEGRAD_SEPARATE_ENGINES) && !defined(FUSEGRAD_DEVICE)
FG_SHARED_LOSSES(extern, float)
FG_SHARED_LOSSES(extern, double)
#endif
}  // namespace fusegrad::nn::losses
