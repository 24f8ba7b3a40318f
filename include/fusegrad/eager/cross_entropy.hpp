#pragma once
/// \file The cross-entropies of tf.nn: softmax_cross_entropy_with_logits (a distribution per
/// row), sparse_softmax_cross_entropy_with_logits (a class index per row) and
/// sigmoid_cross_entropy_with_logits (independent binary labels), all stable for logits of any
/// size (the maximum is subtracted; |x| never reaches exp).
/// Note [cross-entropy recording]: the two softmax forms are one recorded op each, computed as
/// TensorFlow's kernels compute them (log(sum(exp(x - max))) - (x - max), weighted by the
/// labels). The gradient with respect to the logits is one fused pass,
/// g * (exp(x - max) / sum - labels), over the shift and the sum the forward pass kept. Those
/// are constants to a tape; so when a tape that records the backward step tracks the logits or
/// the labels (higher orders), the step recomputes the log of the sum with reduce_logsumexp, a
/// recorded op of the logits, and uses it instead: the same gradient, which that tape can
/// differentiate again. Bad labels or shapes throw before anything is evaluated or recorded.

#include <array>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "../eval/creation.hpp"
#include "indexing.hpp"
#include "softmax.hpp"

namespace fusegrad {
namespace eager {
/// Whether a tape that records now tracks one of ids: the backward steps of Note
/// [cross-entropy recording] then recompute what they kept, as recorded ops.
template <std::size_t N>
bool recorded_again(const std::array<tensor_id, N>& ids) {
  return autodiff::any_tape_tracks(std::span<const tensor_id>(ids.data(), N));
}

/// t's buffer under a new identity and shape s of as many elements (a kept-dimensions result
/// given its reduced shape), unrecorded: for results recorded afterwards as one op.
template <class T>
tensor<T> viewed_as(const tensor<T>& t, const fg::shape& s) {
  return tensor<T>(t.buffer(), s, core::next_id());
}

/// Checks that the labels and the logits of cross-entropy `op` live on one device, before either
/// is evaluated.
template <class L, class X>
void check_devices(const L& labels, const X& logits, const char* op) {
  dispatch::check_same_device(op, dispatch::common_device(ops::to_operand(logits)),
                              dispatch::common_device(ops::to_operand(labels)));
}

/// The backward step of softmax_cross_entropy_with_logits (Note [cross-entropy recording]): the
/// logits' gradient g * (sum(z) * softmax(x) - z), the labels' g * (log(sum) - (x - max)).
template <class T>
struct softmax_cross_entropy_grad {
  tensor<T> x, z;                 ///< logits and labels
  tensor<T> shift, sum, log_sum;  ///< the forward pass's maximum, sum of exponentials and its log (kept shape)
  tensor<T> label_sum;            ///< sum(z) along the axis (kept shape)
  fg::shape keep;                 ///< the loss's shape with the class axis kept as 1
  axes ax;                        ///< the class axis
  std::array<tensor<T>, 2> operator()(const tensor<T>& g, std::span<const bool> need) const {
    const tensor<T> gk = reshape(g, keep);
    std::array<tensor<T>, 2> r;
    if (recorded_again(std::array{x.id(), z.id()})) {
      const tensor<T> lse = reduce_logsumexp(x - shift, ax, true);
      const tensor<T> zsum = reduce_sum(z, ax, true);
      if (need[0]) r[0] = gk * (exp(x - shift - lse) * zsum - z);
      if (need[1]) r[1] = gk * (lse - (x - shift));
    } else {
      if (need[0]) r[0] = gk * (exp(x - shift) / sum * label_sum - z);
      if (need[1]) r[1] = gk * (log_sum - (x - shift));
    }
    return r;
  }
};

/// Note [class indices as logits]: the sparse cross-entropy's passes over the logits compare
/// each column's class index with its row's label. Compared as the labels' integer type, the
/// comparison would give the pass operands of two types, which the host runs element by element
/// (Note [host simd]); so the one-hot enters as where(a == b, value, 0) with a and b tensors of
/// T: where every class index is exact in T (2^24 classes for float32, 2^53 for float64), a is
/// 0, 1, ..., classes - 1 and b the labels, converted; beyond that, a is one_hot(labels) and b
/// a 0-d 1. Every leaf is of T, so each pass is one SIMD pass (5.7 times faster for the
/// backward pass of 1024 rows of 1000 classes here), and both cases share one expression type,
/// so the passes are compiled once.
template <class T>
struct class_match {
  tensor<T> a, b;  ///< compared: one where the label is the column's class
  tensor<T> one;   ///< 1 as a 0-d tensor on the logits' device

  /// labels of the loss's shape and the same viewed in the kept shape (a 1 for the class axis).
  template <class I>
  class_match(const tensor<I>& labels, const tensor<I>& labels_kept, std::size_t classes, fg::device d)
      : one(tensor<T>(T(1)).to(d)) {
    if (classes <= (std::uint64_t{1} << std::numeric_limits<T>::digits)) {
      a = range<T>(static_cast<T>(classes)).to(d);
      b = dispatch::unrecorded_evaluate(cast<T>(labels_kept), labels_kept.shape(), d);
    } else {
      a = one_hot<T>(labels, static_cast<long>(classes));
      b = one;
    }
  }
  /// where(label == class, value, 0).
  template <class V>
  auto select(const V& value) const {
    return where(equal(a, b), value, T(0));
  }
};

/// The backward step of sparse_softmax_cross_entropy_with_logits (Note [cross-entropy
/// recording]): g * (softmax(x) - one_hot(labels)), the one-hot a comparison fused into the pass
/// (Note [class indices as logits]).
template <class T>
struct sparse_softmax_cross_entropy_grad {
  tensor<T> x;           ///< logits
  class_match<T> match;
  tensor<T> shift, sum;  ///< the forward pass's maximum and sum of exponentials (kept shape)
  fg::shape keep;        ///< the loss's shape with the class axis kept as 1
  axes ax;               ///< the class axis, the last
  std::array<tensor<T>, 1> operator()(const tensor<T>& g, std::span<const bool>) const {
    const tensor<T> gk = reshape(g, keep);
    if (recorded_again(std::array{x.id()})) {
      const tensor<T> lse = reduce_logsumexp(x - shift, ax, true);
      return {tensor<T>(gk * (exp(x - shift - lse) - match.select(match.one)))};
    }
    return {tensor<T>(gk * (exp(x - shift) / sum - match.select(match.one)))};
  }
};
}  // namespace eager

/// -sum(labels * log_softmax(logits)) along axis (tf.nn.softmax_cross_entropy_with_logits):
/// labels and logits of one shape, each row of labels a distribution; the result has the
/// logits' shape without the axis. Differentiable in both (Note [cross-entropy recording]).
template <tensor_like L, tensor_like X>
tensor<value_type_of<X>> softmax_cross_entropy_with_logits(const L& labels, const X& logits, long axis = -1) {
  using T = value_type_of<X>;
  static_assert(std::floating_point<T>,
                "fg::softmax_cross_entropy_with_logits needs floating-point logits; convert with fg::cast<float>(x)");
  static_assert(std::same_as<value_type_of<L>, T>,
                "fg::softmax_cross_entropy_with_logits: labels and logits must have one element type; convert the "
                "labels with fg::cast<T>(labels)");
  constexpr const char* op = "softmax_cross_entropy_with_logits";
  const fg::shape xs = ops::to_operand(logits).shape(), zs = ops::to_operand(labels).shape();
  FG_CHECK(zs == xs, shape_error, "fg::", op, ": labels of shape ", zs, " and logits of shape ", xs,
           " must have the same shape (one distribution over the classes per row of logits)");
  const axes ax = eager::class_axis(xs, axis, op);
  const eager::reduce_plan p = eager::plan_reduce(xs, ax, op);
  eager::check_devices(labels, logits, op);
  const tensor<T> xt = eval(logits), zt = eval(labels);
  const fg::device d = xt.device();
  const auto [shift, sum] = eager::shifted_exp_sum(xt, p);
  const tensor<T> log_sum = dispatch::unrecorded_evaluate(log(sum), p.keep, d);
  // TensorFlow's arithmetic: sum(labels * (log(sum) - (x - max))).
  const tensor<T> loss = eager::viewed_as(
      eager::reduce_with<ops::sum_reducer<T>>(zt * (log_sum - (xt - shift)), p, xs, d), p.out);
  // The labels' sum per row, for the backward step only: the gradient is sum(labels) * softmax -
  // labels, which is TensorFlow's softmax - labels when each row of labels sums to 1.
  tensor<T> label_sum;
  if (autodiff::recording()) label_sum = eager::reduce_with<ops::sum_reducer<T>>(expr::leaf<T>{zt}, p, xs, d);
  eager::epilogue(op, loss, {zt.shape(), xt.shape()}, {xt.id(), zt.id()},
                  eager::softmax_cross_entropy_grad<T>{xt, zt, shift, sum, log_sum, label_sum, p.keep, ax});
  return loss;
}

/// -log_softmax(logits)[label] per row (tf.nn.sparse_softmax_cross_entropy_with_logits): logits
/// [batch..., classes], labels int32 or int64 of shape [batch...], each in [0, classes) (else
/// index_error naming the row and the label, as TensorFlow's CPU kernel). Differentiable in the
/// logits, to every order (Note [cross-entropy recording]).
template <tensor_like L, tensor_like X>
tensor<value_type_of<X>> sparse_softmax_cross_entropy_with_logits(const L& labels, const X& logits) {
  using T = value_type_of<X>;
  using I = value_type_of<L>;
  static_assert(std::floating_point<T>,
                "fg::sparse_softmax_cross_entropy_with_logits needs floating-point logits; convert with "
                "fg::cast<float>(x)");
  static_assert(std::same_as<I, std::int32_t> || std::same_as<I, std::int64_t>,
                "fg::sparse_softmax_cross_entropy_with_logits: labels must be class indices, int32 or int64; convert "
                "with fg::cast<int64_t>(labels), or use fg::softmax_cross_entropy_with_logits for distributions");
  constexpr const char* op = "sparse_softmax_cross_entropy_with_logits";
  const fg::shape xs = ops::to_operand(logits).shape(), ls = ops::to_operand(labels).shape();
  FG_CHECK(xs.rank() > 0, shape_error, "fg::", op,
           ": logits must have rank 1 or more ([batch..., classes]); got a scalar");
  const std::size_t classes = xs[xs.rank() - 1];
  fg::shape rows;
  for (std::size_t k = 0; k + 1 < xs.rank(); ++k) rows.push_back(xs[k]);
  FG_CHECK(ls == rows, shape_error, "fg::", op, ": labels of shape ", ls, " do not fit logits of shape ", xs,
           "; the labels' shape must be the logits' shape without its last (class) axis, ", rows,
           " (one class index per row)");
  eager::check_devices(labels, logits, op);
  const tensor<I> lt = eval(labels);
  {
    const tensor<I> hl = dispatch::host_operand(lt, op);
    for (std::size_t i = 0; i < hl.size(); ++i) {
      const I v = hl.data()[i];
      FG_CHECK(v >= 0 && static_cast<std::uint64_t>(v) < classes, index_error, "fg::", op,
               ": Received a label value of ", v, " which is outside the valid range of [0, ", classes, ") in row ", i,
               " of labels of shape ", ls, "; labels are class indices into the last axis of logits of shape ", xs);
    }
  }
  const tensor<T> xt = eval(logits);
  const fg::device d = xt.device();
  const axes ax = static_cast<long>(xs.rank() - 1);
  const eager::reduce_plan p = eager::plan_reduce(xs, ax, op);
  const eager::class_match<T> match(lt, eager::viewed_as(lt, p.keep), classes, d);
  const auto [shift, sum] = eager::shifted_exp_sum(xt, p);
  const tensor<T> picked = eager::reduce_with<ops::sum_reducer<T>>(match.select(xt - shift), p, xs, d);
  // TensorFlow's arithmetic: log(sum) - (x[label] - max).
  const tensor<T> loss = eager::viewed_as(dispatch::unrecorded_evaluate(log(sum) - picked, p.keep, d), p.out);
  using backward = eager::sparse_softmax_cross_entropy_grad<T>;
  eager::epilogue(op, loss, {lt.shape(), xt.shape()}, {xt.id()}, backward{xt, match, shift, sum, p.keep, ax});
  return loss;
}

/// max(x, 0) - x * z + log(1 + exp(-|x|)) for logits x and labels z of one shape
/// (tf.nn.sigmoid_cross_entropy_with_logits): elementwise, stable, differentiable in both.
template <tensor_like L, tensor_like X>
auto sigmoid_cross_entropy_with_logits(const L& labels, const X& logits) {
  using T = value_type_of<X>;
  static_assert(std::floating_point<T>,
                "fg::sigmoid_cross_entropy_with_logits needs floating-point logits; convert with fg::cast<float>(x)");
  static_assert(std::same_as<value_type_of<L>, T>,
                "fg::sigmoid_cross_entropy_with_logits: labels and logits must have one element type; convert the "
                "labels with fg::cast<T>(labels)");
  const auto x = ops::to_operand(logits);
  const auto z = ops::to_operand(labels);
  FG_CHECK(z.shape() == x.shape(), shape_error, "fg::sigmoid_cross_entropy_with_logits: labels of shape ", z.shape(),
           " and logits of shape ", x.shape(), " must have the same shape");
  // TensorFlow's formula, selections included: at x = 0 both select the x >= 0 side, so the
  // gradient there is sigmoid(0) - z, where relu and abs would give -z.
  const auto nonnegative = x >= 0;
  return where(nonnegative, x, T(0)) - x * z + log1p(exp(where(nonnegative, -x, x)));
}
}  // namespace fusegrad
