#pragma once
/// \file fg::nn::metrics: Keras 3's metrics, objects with update_state / result / reset_state.
/// Each keeps a weighted total and a count (in double, on the host) and its result is
/// total / count as a float32 scalar (0 before the first update, as Keras gives). mean and sum
/// take values; the accuracies and mean_squared_error take (y_true, y_pred), and every
/// update_state takes optional sample weights, one per sample. Metrics record nothing on tapes.

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "../eager/evaluate.hpp"
#include "../eager/reduce.hpp"
#include "../eager/reshape.hpp"
#include "../ops/binary.hpp"
#include "../ops/unary.hpp"

namespace fusegrad::nn::metrics {

/// What every metric shares: its name, the running total and count, result and reset.
class metric {
 public:
  explicit metric(std::string name) : name_(std::move(name)) {}
  const std::string& name() const noexcept { return name_; }
  /// total / count: the metric's value so far (0 before any update).
  tensor<float> result() const { return tensor<float>(count_ == 0 ? 0.f : static_cast<float>(total_ / count_)); }
  void reset_state() noexcept { total_ = count_ = 0; }

 protected:
  /// Adds per-sample values v, weighted by w when given (one weight per sample or one for all).
  template <class T>
  void add(const tensor<T>& v, const tensor<float>* w, bool average) {
    const tensor<double> x = tensor<double>(cast<double>(v)).cpu();
    const std::size_t n = x.size();
    if (!w) {
      double s = 0;
      for (std::size_t i = 0; i < n; ++i) s += x.data()[i];
      total_ += s;
      count_ += average ? static_cast<double>(n) : 1.0;
      return;
    }
    const tensor<double> wd = tensor<double>(cast<double>(*w)).cpu();
    FG_CHECK(wd.size() == 1 || wd.size() == n || (n > 0 && wd.size() > 0 && n % wd.size() == 0), shape_error,
             "fg::nn::metrics::", name_, ": ", wd.size(), " sample weights for ", n, " values");
    const std::size_t per = wd.size() == 1 ? n : n / wd.size();
    double s = 0, c = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double wi = wd.data()[wd.size() == 1 ? 0 : i / per];
      s += x.data()[i] * wi;
      c += wi;
    }
    total_ += s;
    count_ += average ? c : 1.0;
  }

 private:
  std::string name_;
  double total_ = 0, count_ = 0;
};

/// The weighted mean of every value given (Keras' Mean).
class mean : public metric {
 public:
  explicit mean(std::string name = "mean") : metric(std::move(name)) {}
  template <tensor_like X>
  void update_state(const X& values) { add(eval(values), nullptr, true); }
  template <tensor_like X>
  void update_state(const X& values, const tensor<float>& sample_weight) { add(eval(values), &sample_weight, true); }
  /// Keras' `m(values)`: updates, then returns the result.
  template <tensor_like X>
  tensor<float> operator()(const X& values) {
    update_state(values);
    return result();
  }
  tensor<float> operator()(double value) { return (*this)(tensor<double>(value)); }
};

/// The weighted sum of every value given (Keras' Sum); its result is the sum itself.
class sum : public metric {
 public:
  explicit sum(std::string name = "sum") : metric(std::move(name)) {}
  template <tensor_like X>
  void update_state(const X& values) { add(eval(values), nullptr, false); }
  template <tensor_like X>
  void update_state(const X& values, const tensor<float>& sample_weight) { add(eval(values), &sample_weight, false); }
};

namespace impl {
/// The mean of what F gives per sample for (y_true, y_pred).
template <class F>
class pairwise : public metric {
 public:
  pairwise(std::string name, F f) : metric(std::move(name)), f_(std::move(f)) {}
  template <tensor_like Y, tensor_like P>
  void update_state(const Y& y_true, const P& y_pred) { add(f_(eval(y_true), eval(y_pred)), nullptr, true); }
  template <tensor_like Y, tensor_like P>
  void update_state(const Y& y_true, const P& y_pred, const tensor<float>& sample_weight) {
    add(f_(eval(y_true), eval(y_pred)), &sample_weight, true);
  }

 private:
  F f_;
};
template <class A, class B>
void check_same(const char* metric, const tensor<A>& t, const tensor<B>& p) {
  FG_CHECK(t.shape() == p.shape(), shape_error, "fg::nn::metrics::", metric, ": y_true of shape ", t.shape(),
           " and y_pred of shape ", p.shape(), " must have the same shape");
}
template <class B>
void check_classes(const char* metric, const fg::shape& labels, const tensor<B>& p) {
  FG_CHECK(p.shape().rank() >= 1 && labels.rank() + 1 == p.shape().rank(), shape_error, "fg::nn::metrics::", metric,
           ": labels of shape ", labels, " need predictions with one more axis (the classes), got shape ", p.shape());
}
struct equal_fn {
  template <class A, class B>
  tensor<float> operator()(const tensor<A>& t, const tensor<B>& p) const {
    check_same("accuracy", t, p);
    return cast<float>(equal(t, cast<A>(p)));
  }
};
struct binary_fn {
  double threshold;
  template <class A, class B>
  tensor<float> operator()(const tensor<A>& t, const tensor<B>& p) const {
    check_same("binary_accuracy", t, p);
    return cast<float>(equal(cast<float>(t), cast<float>(p > static_cast<B>(threshold))));
  }
};
struct categorical_fn {
  template <class A, class B>
  tensor<float> operator()(const tensor<A>& t, const tensor<B>& p) const {
    check_same("categorical_accuracy", t, p);
    const long last = static_cast<long>(p.shape().rank()) - 1;
    return cast<float>(equal(argmax(t, last), argmax(p, last)));
  }
};
struct sparse_categorical_fn {
  template <class A, class B>
  tensor<float> operator()(const tensor<A>& t, const tensor<B>& p) const {
    check_classes("sparse_categorical_accuracy", t.shape(), p);
    return cast<float>(equal(cast<std::int64_t>(t), argmax(p, static_cast<long>(p.shape().rank()) - 1)));
  }
};
/// Whether the true class is among the k largest predictions (ties counted for the true class,
/// as tf.math.in_top_k does: a prediction ranks by how many are strictly larger).
struct top_k_fn {
  std::int64_t k;
  bool sparse;
  template <class A, class B>
  tensor<float> operator()(const tensor<A>& t, const tensor<B>& p) const {
    const char* name = sparse ? "sparse_top_k_categorical_accuracy" : "top_k_categorical_accuracy";
    if (sparse) check_classes(name, t.shape(), p);
    else check_same(name, t, p);
    const tensor<B> ph = p.cpu();
    const std::size_t classes = ph.shape()[ph.shape().rank() - 1], rows = classes ? ph.size() / classes : 0;
    const tensor<std::int64_t> truth =
        sparse ? tensor<std::int64_t>(cast<std::int64_t>(t)).cpu() : argmax(t, static_cast<long>(t.shape().rank()) - 1).cpu();
    std::vector<float> hit(rows);
    for (std::size_t r = 0; r < rows; ++r) {
      const std::int64_t c = truth.data()[r];
      FG_CHECK(c >= 0 && static_cast<std::size_t>(c) < classes, index_error, "fg::nn::metrics::", name, ": label ",
               c, " in row ", r, " is outside [0, ", classes, ")");
      const B v = ph.data()[r * classes + c];
      std::int64_t larger = 0;
      for (std::size_t j = 0; j < classes; ++j) larger += ph.data()[r * classes + j] > v;
      hit[r] = larger < k ? 1.f : 0.f;
    }
    return tensor<float>(fg::shape{rows}, hit);
  }
};
struct mse_fn {
  template <class A, class B>
  tensor<float> operator()(const tensor<A>& t, const tensor<B>& p) const {
    check_same("mean_squared_error", t, p);
    return cast<float>(reduce_mean(square(p - cast<B>(t)), -1));
  }
};
}  // namespace impl

/// The fraction of predictions equal to the labels (Keras' Accuracy).
class accuracy : public impl::pairwise<impl::equal_fn> {
 public:
  explicit accuracy(std::string name = "accuracy") : pairwise(std::move(name), {}) {}
};
/// The fraction of predictions above `threshold` that match labels of 1 (Keras' BinaryAccuracy).
class binary_accuracy : public impl::pairwise<impl::binary_fn> {
 public:
  explicit binary_accuracy(double threshold = 0.5, std::string name = "binary_accuracy")
      : pairwise(std::move(name), {threshold}) {}
};
/// The fraction of rows whose largest prediction is at the one-hot label (Keras' CategoricalAccuracy).
class categorical_accuracy : public impl::pairwise<impl::categorical_fn> {
 public:
  explicit categorical_accuracy(std::string name = "categorical_accuracy") : pairwise(std::move(name), {}) {}
};
/// The fraction of rows whose largest prediction is at the integer label (Keras' SparseCategoricalAccuracy).
class sparse_categorical_accuracy : public impl::pairwise<impl::sparse_categorical_fn> {
 public:
  explicit sparse_categorical_accuracy(std::string name = "sparse_categorical_accuracy")
      : pairwise(std::move(name), {}) {}
};
/// The fraction of rows whose one-hot label is among the k largest predictions.
class top_k_categorical_accuracy : public impl::pairwise<impl::top_k_fn> {
 public:
  explicit top_k_categorical_accuracy(std::int64_t k = 5, std::string name = "top_k_categorical_accuracy")
      : pairwise(std::move(name), {k, false}) {}
};
/// The fraction of rows whose integer label is among the k largest predictions.
class sparse_top_k_categorical_accuracy : public impl::pairwise<impl::top_k_fn> {
 public:
  explicit sparse_top_k_categorical_accuracy(std::int64_t k = 5, std::string name = "sparse_top_k_categorical_accuracy")
      : pairwise(std::move(name), {k, true}) {}
};
/// The mean of the per-sample mean squared errors (Keras' MeanSquaredError metric).
class mean_squared_error : public impl::pairwise<impl::mse_fn> {
 public:
  explicit mean_squared_error(std::string name = "mean_squared_error") : pairwise(std::move(name), {}) {}
};
}  // namespace fusegrad::nn::metrics
