#pragma once
/// \file Keras' compile / fit / evaluate / predict, for float32 models: nn::keras_model<D> gives
/// them to a model type D (nn::sequential has them; nn::model<S> gives them to a plain struct S).
/// The input x is float32, or integer indices (int32, int64) for a model that takes them (one
/// whose first layer is an embedding).
/// compile takes an optimizer, a loss object and metrics by Keras' names ("accuracy" is the
/// accuracy that suits the loss); fit runs epochs of shuffled batches, each one tape, one
/// gradient and one optimizer step, logs the mean loss and every metric per epoch (and "val_"
/// ones on the validation data or the validation_split's last samples), calls the callbacks and
/// the progress logger, and returns the history. The loss that fit minimises and that fit and
/// evaluate report is the compiled loss plus the model's regularization losses
/// (nn::regularization_losses), as Keras' is. A step changes the variables only after its
/// loss and gradient are computed, so an exception from a loss or a callback leaves them as the
/// last completed step left them.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <unistd.h>
#include <utility>
#include <variant>
#include <vector>
#if __has_include(<cxxabi.h>)
#include <cxxabi.h>
#endif

#include "../eager/indexing.hpp"
#include "../eager/shape_ops.hpp"
#include "callbacks.hpp"
#include "losses.hpp"
#include "metrics.hpp"
#include "model.hpp"
#include "summary.hpp"

namespace fusegrad::nn {

/// Targets as fit takes them: class indices or values.
using target = std::variant<tensor<std::int64_t>, tensor<std::int32_t>, tensor<float>, tensor<double>>;
/// A model's input as fit's validation_data takes it: float32, or indices for a model that takes them.
using model_input = std::variant<tensor<float>, tensor<std::int32_t>, tensor<std::int64_t>>;

/// An optimizer as compile takes it: any of fg::optimizers (the same optimizer: a handle).
class any_optimizer {
 public:
  any_optimizer() = default;
  template <std::derived_from<optimizers::optimizer> O>
  any_optimizer(O o) : p_(std::make_shared<O>(std::move(o))) {}  // NOLINT: an optimizer is an any_optimizer
  optimizers::optimizer* get() const noexcept { return p_.get(); }

 private:
  std::shared_ptr<optimizers::optimizer> p_;
};

/// The targets y as element type T (Keras casts them to what the loss takes).
template <class T>
tensor<T> targets_as(const target& y) {
  return std::visit(
      [](const auto& t) -> tensor<T> {
        if constexpr (std::is_same_v<value_type_of<std::decay_t<decltype(t)>>, T>) return t;
        else return cast<T>(t);
      },
      y);
}

namespace impl {
/// T's name as written, without its namespaces (where the compiler can demangle it).
template <class T>
std::string type_name() {
  std::string n = typeid(T).name();
#if __has_include(<cxxabi.h>)
  int status = 0;
  if (char* d = abi::__cxa_demangle(n.c_str(), nullptr, nullptr, &status)) {
    n = d;
    std::free(d);
  }
#endif
  const std::size_t colons = n.rfind("::", n.find('<'));
  return colons == std::string::npos ? n : n.substr(colons + 2);
}
/// Loss l on float32 predictions, the targets cast to what l takes: class indices (int64) or
/// float32.
template <class L>
tensor<float> compiled_loss(const L& l, const target& y, const tensor<float>& pred) {
  if constexpr (requires { L::takes_class_indices; }) return l(targets_as<std::int64_t>(y), pred);
  else return l(targets_as<float>(y), pred);
}
}  // namespace impl

/// A loss as compile takes it: any loss object of fg::nn::losses, applied to float32
/// predictions; the targets are cast to class indices (int64) for a loss that takes them, to
/// float32 for the others.
class any_loss {
 public:
  any_loss() = default;
  template <class L>
    requires requires(const L& l) { l.name(); }
  any_loss(L l) : name_(l.name()) {  // NOLINT: a loss is an any_loss
    f_ = [l](const target& y, const tensor<float>& pred) { return impl::compiled_loss(l, y, pred); };
  }
  tensor<float> operator()(const target& y, const tensor<float>& pred) const { return f_(y, pred); }
  const std::string& name() const noexcept { return name_; }
  explicit operator bool() const noexcept { return static_cast<bool>(f_); }

 private:
  std::string name_;
  std::function<tensor<float>(const target&, const tensor<float>&)> f_;
};

namespace impl {
template <class E>
struct batch_pair : std::false_type {};
template <class X, class Y>
struct batch_pair<std::tuple<tensor<X>, tensor<Y>>> : std::true_type {
  using x = X;
};
template <class DS>
using element_of = std::remove_cvref_t<decltype(*std::declval<const DS&>().begin())>;
}  // namespace impl

/// A dataset of batches as fit and evaluate take it: anything a range-based for loop walks
/// that gives (x, y) pairs of tensors, such as an fg::data::dataset after batch(). Each pass
/// (`begin()`) is one epoch.
template <class DS>
concept batch_dataset = requires(const DS& ds) {
  ds.begin();
  ds.end();
} && impl::batch_pair<impl::element_of<DS>>::value;

/// A dataset of input batches as predict takes it: walked by a range-based for loop, giving tensors.
template <class DS>
concept input_dataset = requires(const DS& ds) {
  ds.begin();
  ds.end();
} && impl::is_tensor<impl::element_of<DS>>::value;

/// fit's validation data: x and y tensors, or a dataset of (x, y) batches (batch_dataset).
class validation_source {
 public:
  /// Calls f(x, y) for each batch: one for tensors (evaluate batches them), each of a dataset.
  using for_each_fn = std::function<void(const std::function<void(const model_input&, const target&)>&)>;

  validation_source(std::pair<model_input, target> xy) : xy_(std::move(xy)) {}  // NOLINT: implicit, as Keras' tuple
  template <class X, class Y>
    requires(!std::is_same_v<std::pair<tensor<X>, tensor<Y>>, std::pair<model_input, target>>)
  validation_source(std::pair<tensor<X>, tensor<Y>> xy)  // NOLINT
      : xy_(std::pair<model_input, target>{std::move(xy.first), std::move(xy.second)}) {}
  template <batch_dataset DS>
  validation_source(DS ds)  // NOLINT: a dataset is validation data
      : batches_([ds = std::move(ds)](const std::function<void(const model_input&, const target&)>& f) {
          for (const auto& [x, y] : ds) f(model_input(x), target(y));
        }) {}

  /// The tensors, when given as tensors.
  const std::optional<std::pair<model_input, target>>& tensors() const noexcept { return xy_; }
  /// The batches, when given as a dataset.
  const for_each_fn& batches() const noexcept { return batches_; }

 private:
  std::optional<std::pair<model_input, target>> xy_;
  for_each_fn batches_;
};

struct compile_options {
  any_optimizer optimizer = {};
  any_loss loss = {};
  std::vector<std::string> metrics = {};
};
struct fit_options {
  std::int64_t batch_size = 32;
  int epochs = 1;
  int verbose = 1;  ///< 0 silent, 1 the progress bar (one line per epoch off a terminal), 2 one line per epoch
  double validation_split = 0;  ///< the fraction of samples, taken from the end before shuffling
  std::vector<callbacks::callback_ref> callbacks = {};
  /// x and y (x of the kind fit's x is), or a dataset of (x, y) batches
  std::optional<validation_source> validation_data = std::nullopt;
  bool shuffle = true;  ///< tensors only: a dataset shuffles itself (its shuffle())
  std::optional<std::uint64_t> seed = std::nullopt;  ///< the shuffles' seed (a fixed default when absent)
  int initial_epoch = 0;
  std::ostream* output = nullptr;  ///< where the progress logger writes (std::cout when absent)
  /// Datasets only: the batches of one epoch, drawn from one pass that continues across epochs
  /// (give a repeat()ed dataset); absent, each epoch is one whole pass.
  std::optional<std::int64_t> steps_per_epoch = std::nullopt;
};
struct evaluate_options {
  std::int64_t batch_size = 32;
};

/// The per-epoch logs of fit: history["loss"], history["val_accuracy"], ...
class history {
 public:
  std::map<std::string, std::vector<double>> values;
  std::vector<int> epochs;
  const std::vector<double>& operator[](const std::string& name) const {
    const auto it = values.find(name);
    FG_CHECK(it != values.end(), value_error, "fg::nn::history: nothing logged as \"", name, "\"");
    return it->second;
  }
};

namespace impl {
// The functions below are templates so that only a unit that calls fit compiles them.
template <class = void>
std::int64_t samples(const target& y) {
  return std::visit([](const auto& t) { return t.shape().rank() ? static_cast<std::int64_t>(t.shape()[0]) : 1; }, y);
}
template <class = void>
target rows(const target& y, const tensor<std::int64_t>& idx) {
  return std::visit([&](const auto& t) -> target { return gather(t, idx, 0); }, y);
}
/// Note [batches on the model's device]: fit, evaluate and predict copy each batch to the default
/// device (fg::device_scope), where a model's variables are made on its first call, as Keras
/// copies a host batch to the GPU it trains on: `fg::device_scope on("/gpu:0"); model.fit(x, y)`
/// trains on the GPU from host tensors and datasets. A batch already there is not copied.
template <class T>
tensor<T> on_default_device(const tensor<T>& t) {
  return t.to(default_device());
}
template <class = void>
target on_default_device(const target& y) {
  return std::visit([](const auto& t) -> target { return on_default_device(t); }, y);
}
/// validation_data's x as element type X (fit's x's): the same type, or indices of the other width.
template <class X>
tensor<X> input_as(const model_input& v) {
  return std::visit(
      [](const auto& t) -> tensor<X> {
        using V = value_type_of<std::decay_t<decltype(t)>>;
        if constexpr (std::is_same_v<V, X>) return t;
        else if constexpr (std::is_integral_v<V> && std::is_integral_v<X>) return cast<X>(t);
        else
          throw value_error(std::string("fg::nn::fit: validation_data's x is ") +
                            (std::is_integral_v<V> ? "integer" : "float32") + " but x is " +
                            (std::is_integral_v<X> ? "integer" : "float32") + "; give both of one kind");
      },
      v);
}
/// loss plus each regularization term of the variables (Keras' compiled loss plus model.losses).
template <class = void>
tensor<float> with_regularization(tensor<float> loss, const std::vector<named_variable>& vars) {
  for (const tensor<float>& r : regularization_terms<float>(vars)) loss = loss + r;
  return loss;
}
/// A metric of compile's list, type-erased over the targets.
struct any_metric {
  std::string name;
  std::function<void(const target&, const tensor<float>&)> update;
  std::function<double()> result;
  std::function<void()> reset;
};
template <class M>
any_metric erase(std::string name, M m) {
  auto p = std::make_shared<M>(std::move(m));
  return {std::move(name),
          [p](const target& y, const tensor<float>& pred) {
            std::visit(
                [&](const auto& t) {
                  if constexpr (requires { p->update_state(t, pred); }) p->update_state(t, pred);
                },
                y);
          },
          [p] { return static_cast<double>(p->result().cpu().item()); }, [p] { p->reset_state(); }};
}
/// The metric Keras names `name`, for a model compiled with loss `loss`.
template <class = void>
any_metric metric_named(const std::string& name, const std::string& loss) {
  if (name == "accuracy" || name == "acc") {
    if (loss == "sparse_categorical_crossentropy") return erase(name, metrics::sparse_categorical_accuracy());
    if (loss == "categorical_crossentropy") return erase(name, metrics::categorical_accuracy());
    if (loss == "binary_crossentropy") return erase(name, metrics::binary_accuracy());
    return erase(name, metrics::accuracy());
  }
  if (name == "sparse_categorical_accuracy") return erase(name, metrics::sparse_categorical_accuracy());
  if (name == "categorical_accuracy") return erase(name, metrics::categorical_accuracy());
  if (name == "binary_accuracy") return erase(name, metrics::binary_accuracy());
  if (name == "top_k_categorical_accuracy") return erase(name, metrics::top_k_categorical_accuracy());
  if (name == "sparse_top_k_categorical_accuracy") return erase(name, metrics::sparse_top_k_categorical_accuracy());
  if (name == "mse" || name == "mean_squared_error") return erase(name, metrics::mean_squared_error());
  throw value_error("fg::nn::compile: unknown metric '" + name +
                    "'; known: accuracy, sparse_categorical_accuracy, categorical_accuracy, binary_accuracy, "
                    "top_k_categorical_accuracy, sparse_top_k_categorical_accuracy, mean_squared_error");
}
}  // namespace impl

/// compile's metrics and fit's losses for float32 models, compiled once in libfusegrad in
/// package mode (Note [shared layer code], src/nn.cpp): P is `extern` here, empty there.
#define FG_SHARED_FIT(P)                                                                                         \
  P template impl::any_metric impl::metric_named<void>(const std::string&, const std::string&);                  \
  P template target impl::rows<void>(const target&, const tensor<std::int64_t>&);                                 \
  P template tensor<float> impl::compiled_loss(const losses::mean_squared_error&, const target&, const tensor<float>&); \
  P template tensor<float> impl::compiled_loss(const losses::mean_absolute_error&, const target&, const tensor<float>&); \
  P template tensor<float> impl::compiled_loss(const losses::kl_divergence&, const target&, const tensor<float>&); \
  P template tensor<float> impl::compiled_loss(const losses::huber&, const target&, const tensor<float>&);        \
  P template tensor<float> impl::compiled_loss(const losses::binary_crossentropy&, const target&, const tensor<float>&); \
  P template tensor<float> impl::compiled_loss(const losses::categorical_crossentropy&, const target&,           \
                                              const tensor<float>&);                                            \
  P template tensor<float> impl::compiled_loss(const losses::sparse_categorical_crossentropy&, const target&,    \
                                              const tensor<float>&);
#if defined(FUSEGRAD_SEPARATE_ENGINES) && !defined(FUSEGRAD_DEVICE)
FG_SHARED_FIT(extern)
#endif

/// compile, fit, evaluate and predict for a model type D: callable as `d(x, training)` on
/// float32 input (or on the integer indices that fit is given), its variables found by the model
/// walk. The compiled state is shared by copies.
template <class D>
class keras_model {
 public:
  /// Chooses the optimizer, the loss and the metrics (Keras' model.compile).
  void compile(compile_options o) {
    FG_CHECK(o.optimizer.get(), value_error, "fg::nn::compile: no optimizer given");
    FG_CHECK(static_cast<bool>(o.loss), value_error, "fg::nn::compile: no loss given");
    auto c = std::make_shared<compiled>();
    for (const std::string& m : o.metrics) c->metrics.push_back(impl::metric_named(m, o.loss.name()));
    c->options = std::move(o);
    c_ = std::move(c);
  }

  /// Trains on x (samples along the first axis) and targets y; returns the history.
  history fit(const tensor<float>& x, const target& y, fit_options o = {}) { return run_fit(x, y, std::move(o)); }
  /// Trains on integer indices x, for a model that takes them (one whose first layer is an embedding).
  template <eager::gather_index I>
  history fit(const tensor<I>& x, const target& y, fit_options o = {}) {
    return run_fit(x, y, std::move(o));
  }

  /// The loss (with the regularization losses) and the metrics over x and y, in batches, in
  /// inference mode.
  logs evaluate(const tensor<float>& x, const target& y, evaluate_options o = {}) { return run_evaluate(x, y, o); }
  template <eager::gather_index I>
  logs evaluate(const tensor<I>& x, const target& y, evaluate_options o = {}) {
    return run_evaluate(x, y, o);
  }

  /// The model's outputs for x, in batches, in inference mode.
  tensor<float> predict(const tensor<float>& x, evaluate_options o = {}) { return run_predict(x, o); }
  template <eager::gather_index I>
  tensor<float> predict(const tensor<I>& x, evaluate_options o = {}) {
    return run_predict(x, o);
  }

  /// Trains on a dataset of (x, y) batches (batch_dataset: an fg::data::dataset after batch()):
  /// each epoch one pass over it, or steps_per_epoch batches of one pass that goes on across
  /// epochs. The dataset does its own shuffling; validation_split is for tensors only.
  template <batch_dataset DS>
  history fit(const DS& ds, fit_options o = {}) {
    using X = typename impl::batch_pair<impl::element_of<DS>>::x;
    const compiled& c = check_compiled("fit");
    FG_CHECK(o.validation_split == 0, value_error,
             "fg::nn::fit: validation_split is for tensors; give a dataset's validation data as validation_data");
    FG_CHECK(!o.steps_per_epoch || *o.steps_per_epoch > 0, value_error,
             "fg::nn::fit: steps_per_epoch must be positive, got ", o.steps_per_epoch.value_or(0));
    std::optional<decltype(ds.begin())> it;  // the pass that steps_per_epoch draws from
    std::optional<decltype(ds.end())> end;
    auto batches = [&](int, const auto& step) {
      if (!o.steps_per_epoch) {
        for (const auto& [xb, yb] : ds) step(xb, target(yb));
        return;
      }
      for (std::int64_t b = 0; b < *o.steps_per_epoch; ++b) {
        if (!it) it.emplace(ds.begin()), end.emplace(ds.end());
        FG_CHECK(*it != *end, value_error, "fg::nn::fit: the dataset ran out after ", b, " of steps_per_epoch = ",
                 *o.steps_per_epoch, " batches; repeat() it");
        const auto& [xb, yb] = **it;
        step(xb, target(yb));
        ++*it;
      }
    };
    return train<X>(c, o, o.steps_per_epoch.value_or(0), batches);
  }
  /// The loss and the metrics over a dataset of (x, y) batches, in inference mode.
  template <batch_dataset DS>
  logs evaluate(const DS& ds) {
    using X = typename impl::batch_pair<impl::element_of<DS>>::x;
    return evaluate_batches<X>(check_compiled("evaluate"), "evaluate", [&](const auto& step) {
      for (const auto& [xb, yb] : ds) step(xb, target(yb));
    });
  }
  /// The model's outputs over a dataset of x batches, or of (x, y) batches (y unused), in
  /// inference mode, concatenated.
  template <class DS>
    requires batch_dataset<DS> || input_dataset<DS>
  tensor<float> predict(const DS& ds) {
    std::vector<tensor<float>> parts;
    for (const auto& e : ds) {
      if constexpr (batch_dataset<DS>) parts.push_back(self()(std::get<0>(e), false));
      else parts.push_back(self()(e, false));
    }
    FG_CHECK(!parts.empty(), value_error, "fg::nn::predict: the dataset is empty");
    return parts.size() == 1 ? parts[0] : concat(parts, 0);
  }

  /// Keras' model.losses: the regularization term of each regularized trainable variable, from
  /// the current values (nn::regularization_losses).
  std::vector<tensor<float>> losses() const { return regularization_losses(static_cast<const D&>(*this)); }

 private:
  // fit, evaluate and predict on x of element type X (defined below the class, so that a model
  // type's float32 forms can be compiled once: Note [shared layer code]).
  template <class X>
  history run_fit(const tensor<X>& x, const target& y, fit_options o);
  template <class X>
  logs run_evaluate(const tensor<X>& x, const target& y, evaluate_options o);
  template <class X>
  tensor<float> run_predict(const tensor<X>& x, evaluate_options o);

  struct compiled;
  /// fit's epochs: `batches(epoch, step)` calls step(x, y) for each batch of the epoch; steps
  /// is the batch count of an epoch, 0 where unknown until the first epoch ends.
  template <class X, class Batches>
  history train(const compiled& c, const fit_options& o, std::int64_t steps, Batches& batches);
  /// The loss and metrics over the batches `batches(step)` gives (evaluate's loop).
  template <class X, class Batches>
  logs evaluate_batches(const compiled& c, const char* op, Batches&& batches);
  /// The val_ logs of fit's validation data (none: empty).
  template <class X>
  logs validate(const compiled& c, const fit_options& o);

  struct compiled {
    compile_options options;
    std::vector<impl::any_metric> metrics;
  };
  D& self() { return static_cast<D&>(*this); }
  const compiled& check_compiled(const char* what) const {
    FG_CHECK(c_, value_error, "fg::nn::", what, ": the model is not compiled; call compile() first");
    return *c_;
  }
  static void reset_metrics(const compiled& c) {
    for (const impl::any_metric& m : c.metrics) m.reset();
  }
  static tensor<std::int64_t> range_of(std::int64_t lo, std::int64_t hi) {
    std::vector<std::int64_t> v(static_cast<std::size_t>(hi - lo));
    std::iota(v.begin(), v.end(), lo);
    return tensor<std::int64_t>(fg::shape{v.size()}, v);
  }
  std::shared_ptr<compiled> c_;
};

template <class D>
template <class X>
history keras_model<D>::run_fit(const tensor<X>& x, const target& y, fit_options o) {
  const compiled& c = check_compiled("fit");
  const std::int64_t n = static_cast<std::int64_t>(x.shape().rank() ? x.shape()[0] : 0);
  FG_CHECK(impl::samples(y) == n, shape_error, "fg::nn::fit: x has ", n, " samples (shape ", x.shape(),
           ") but y has ", impl::samples(y));
  FG_CHECK(o.batch_size > 0 && o.epochs >= 0 && o.validation_split >= 0 && o.validation_split < 1, value_error,
           "fg::nn::fit: batch_size must be positive, epochs at least 0 and validation_split in [0, 1)");
  FG_CHECK(!o.steps_per_epoch, value_error, "fg::nn::fit: steps_per_epoch is for datasets; tensors give ",
           "ceil(samples / batch_size) steps");
  // The validation samples: given, or the last validation_split of x and y, before shuffling.
  std::int64_t train_n = n;
  std::optional<std::pair<tensor<X>, target>> split;
  if (!o.validation_data && o.validation_split > 0) {
    train_n = n - static_cast<std::int64_t>(static_cast<double>(n) * o.validation_split);
    split = std::pair{gather(x, range_of(train_n, n), 0), impl::rows(y, range_of(train_n, n))};
  }
  FG_CHECK(train_n > 0, value_error, "fg::nn::fit: no training samples left after validation_split");
  if (o.validation_data && o.validation_data->tensors())  // check the kind of x before training
    (void)impl::input_as<X>(o.validation_data->tensors()->first);
  std::mt19937_64 rng(o.seed.value_or(0x5eed));
  std::vector<std::int64_t> order(static_cast<std::size_t>(train_n));
  const std::int64_t steps = (train_n + o.batch_size - 1) / o.batch_size;
  auto batches = [&](int, const auto& step) {
    std::iota(order.begin(), order.end(), std::int64_t{0});
    if (o.shuffle) std::shuffle(order.begin(), order.end(), rng);
    for (std::int64_t b = 0; b < steps; ++b) {
      const std::int64_t lo = b * o.batch_size, hi = std::min(train_n, lo + o.batch_size);
      const tensor<std::int64_t> idx(fg::shape{static_cast<std::size_t>(hi - lo)},
                                     std::vector<std::int64_t>(order.begin() + lo, order.begin() + hi));
      step(gather(x, idx, 0), impl::rows(y, idx));
    }
  };
  if (!split) return train<X>(c, o, steps, batches);
  fit_options with_split = o;
  with_split.validation_data = validation_source(std::pair<model_input, target>{split->first, split->second});
  return train<X>(c, with_split, steps, batches);
}

template <class D>
template <class X, class Batches>
history keras_model<D>::train(const compiled& c, const fit_options& o, std::int64_t steps, Batches& batches) {
  FG_CHECK(o.epochs >= 0, value_error, "fg::nn::fit: epochs must be at least 0, got ", o.epochs);
  callbacks::training_context ctx;
  ctx.optimizer = c.options.optimizer.get();
  ctx.epochs = o.epochs;
  ctx.steps = steps;
  ctx.sites = [this](bool keras) { return impl::sites_of(self(), keras); };
  std::vector<callbacks::callback_ref> cbs = o.callbacks;
  cbs.emplace_back(callbacks::progress_logger(o.verbose, o.output == nullptr && isatty(1),
                                              o.output ? *o.output : std::cout));
  history h;
  logs last;
  std::vector<variable<float>> vars;  // found by the walk once the first call has made them
  for (auto& cb : cbs) cb->attach(&ctx);
  for (auto& cb : cbs) cb->on_train_begin(last);
  for (int epoch = o.initial_epoch; epoch < o.epochs && !ctx.stop; ++epoch) {
    for (auto& cb : cbs) cb->on_epoch_begin(epoch, last);
    reset_metrics(c);
    double loss_sum = 0;
    std::int64_t seen = 0, b = 0;
    batches(epoch, [&](const tensor<X>& host_xb, const target& host_yb) {
      for (auto& cb : cbs) cb->on_batch_begin(b, last);
      const tensor<X> xb = impl::on_default_device(host_xb);  // Note [batches on the model's device]
      const target yb = impl::on_default_device(host_yb);
      const std::int64_t rows = xb.shape().rank() ? static_cast<std::int64_t>(xb.shape()[0]) : 1;
      FG_CHECK(impl::samples(yb) == rows, shape_error, "fg::nn::fit: batch ", b, " has ", rows,
               " samples in x (shape ", xb.shape(), ") but ", impl::samples(yb), " in y");
      gradient_tape tape;
      const tensor<float> pred = self()(xb, true);
      if (ctx.variables.empty()) {  // the variables exist after the first call
        ctx.variables = named_variables(self());
        vars = trainable_variables(self());
      }
      const tensor<float> loss = impl::with_regularization(c.options.loss(yb, pred), ctx.variables);
      c.options.optimizer.get()->apply_gradients(tape.gradient(loss, vars), vars);
      loss_sum += static_cast<double>(loss.cpu().item()) * static_cast<double>(rows);
      seen += rows;
      for (const impl::any_metric& m : c.metrics) m.update(yb, pred);
      logs batch{{"loss", loss_sum / static_cast<double>(seen)}};
      for (const impl::any_metric& m : c.metrics) batch[m.name] = m.result();
      for (auto& cb : cbs) cb->on_batch_end(b, batch);
      ++b;
    });
    if (ctx.steps <= 0) ctx.steps = b;  // a dataset of unknown length: now known
    logs epoch_logs{{"loss", loss_sum / static_cast<double>(std::max<std::int64_t>(seen, 1))}};
    for (const impl::any_metric& m : c.metrics) epoch_logs[m.name] = m.result();
    for (const auto& [k, value] : validate<X>(c, o)) epoch_logs["val_" + k] = value;
    for (const auto& [k, value] : epoch_logs) h.values[k].push_back(value);
    h.epochs.push_back(epoch);
    last = epoch_logs;
    for (auto& cb : cbs) cb->on_epoch_end(epoch, epoch_logs);
  }
  for (auto& cb : cbs) cb->on_train_end(last);
  return h;
}

template <class D>
template <class X>
logs keras_model<D>::validate(const compiled& c, const fit_options& o) {
  if (!o.validation_data) return {};
  if (const auto& xy = o.validation_data->tensors())
    return run_evaluate(impl::input_as<X>(xy->first), xy->second, {.batch_size = o.batch_size});
  return evaluate_batches<X>(c, "fit", [&](const auto& step) {
    o.validation_data->batches()([&](const model_input& xb, const target& yb) { step(impl::input_as<X>(xb), yb); });
  });
}

template <class D>
template <class X>
logs keras_model<D>::run_evaluate(const tensor<X>& x, const target& y, evaluate_options o) {
  const compiled& c = check_compiled("evaluate");
  const std::int64_t n = static_cast<std::int64_t>(x.shape().rank() ? x.shape()[0] : 0);
  FG_CHECK(impl::samples(y) == n, shape_error, "fg::nn::evaluate: x has ", n, " samples (shape ", x.shape(),
           ") but y has ", impl::samples(y));
  FG_CHECK(o.batch_size > 0, value_error, "fg::nn::evaluate: batch_size must be positive, got ", o.batch_size);
  return evaluate_batches<X>(c, "evaluate", [&](const auto& step) {
    for (std::int64_t lo = 0; lo < n; lo += o.batch_size) {
      const tensor<std::int64_t> idx = range_of(lo, std::min(n, lo + o.batch_size));
      step(gather(x, idx, 0), impl::rows(y, idx));
    }
  });
}

template <class D>
template <class X, class Batches>
logs keras_model<D>::evaluate_batches(const compiled& c, const char* op, Batches&& batches) {
  reset_metrics(c);
  double loss_sum = 0;
  std::int64_t seen = 0;
  std::vector<named_variable> vars;  // found by the walk once the first call has made them
  batches([&](const tensor<X>& host_xb, const target& host_yb) {
    const tensor<X> xb = impl::on_default_device(host_xb);  // Note [batches on the model's device]
    const target yb = impl::on_default_device(host_yb);
    const std::int64_t rows = xb.shape().rank() ? static_cast<std::int64_t>(xb.shape()[0]) : 1;
    FG_CHECK(impl::samples(yb) == rows, shape_error, "fg::nn::", op, ": a batch has ", rows, " samples in x (shape ",
             xb.shape(), ") but ", impl::samples(yb), " in y");
    const tensor<float> pred = self()(xb, false);
    if (seen == 0) vars = named_variables(self());
    const tensor<float> loss = impl::with_regularization(c.options.loss(yb, pred), vars);
    loss_sum += static_cast<double>(loss.cpu().item()) * static_cast<double>(rows);
    seen += rows;
    for (const impl::any_metric& m : c.metrics) m.update(yb, pred);
  });
  logs out{{"loss", seen ? loss_sum / static_cast<double>(seen) : 0.0}};
  for (const impl::any_metric& m : c.metrics) out[m.name] = m.result();
  return out;
}

template <class D>
template <class X>
tensor<float> keras_model<D>::run_predict(const tensor<X>& x, evaluate_options o) {
  FG_CHECK(o.batch_size > 0, value_error, "fg::nn::predict: batch_size must be positive, got ", o.batch_size);
  const std::int64_t n = static_cast<std::int64_t>(x.shape().rank() ? x.shape()[0] : 0);
  std::vector<tensor<float>> parts;
  for (std::int64_t lo = 0; lo < n; lo += o.batch_size)
    parts.push_back(self()(impl::on_default_device(gather(x, range_of(lo, std::min(n, lo + o.batch_size)), 0)), false));
  FG_CHECK(!parts.empty(), value_error, "fg::nn::predict: x has no samples");
  return parts.size() == 1 ? parts[0] : concat(parts, 0);
}

/// A plain struct S with Keras' methods: `nn::model<mnist_model> m; m.compile(...); m.fit(...)`.
/// S must be callable as s(x, training) and adapted to Boost.Hana; the walk sees S's members.
template <class S>
class model : public S, public keras_model<model<S>> {
 public:
  using model_struct = S;
  using S::S;
  model() = default;
  explicit model(S s) : S(std::move(s)) {}
  using S::operator();

  /// The model's name in summary(): S's name without its namespaces ("mnist_model").
  std::string name() const { return impl::type_name<S>(); }
  /// TensorFlow 2's summary table over S's layers (found by the walk, each once, named by its
  /// member path), as Keras prints a subclassed model's. The output shapes are those of each
  /// layer's last call.
  void summary(std::ostream& os = std::cout) const {
    impl::summary_table(os, name(), impl::named_layers(static_cast<const S&>(*this)));
  }
  /// summary()'s text.
  std::string summary_text() const {
    std::ostringstream os;
    summary(os);
    return os.str();
  }
};
}  // namespace fusegrad::nn
