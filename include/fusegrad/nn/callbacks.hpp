#pragma once
/// \file fg::nn::callbacks: what fit calls at the start and end of training, of each epoch and of
/// each batch (Keras' callback interface), and the callbacks Keras ships: early_stopping,
/// lambda_callback, csv_logger, learning_rate_scheduler, and the progress logger that prints
/// TensorFlow 2's progress bar. A user's own callback derives from `callback` and overrides what
/// it needs; `stop_training()` ends fit after the current epoch.

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "layer.hpp"
#include "optimizers/optimizer.hpp"

namespace fusegrad::nn {

/// The values of an epoch or a batch by name: "loss", each metric, and "val_" ones.
using logs = std::map<std::string, double>;

namespace impl {
struct model_sites;
/// Defined in nn/weight_sites.hpp, which nn/sequential.hpp includes at its end.
template <class M>
model_sites sites_of(const M& model, bool keras);
}  // namespace impl

namespace callbacks {

/// What fit gives a callback: the model's variables, the optimizer, and the flag that stops
/// training.
struct training_context {
  std::vector<named_variable> variables;
  /// Where the fitted model's variables go in a weights file of either layout (Note [weights
  /// layouts] in train/weights.hpp), type-erased: model_checkpoint writes what save_weights
  /// would through it. Set by fit.
  std::function<impl::model_sites(bool keras)> sites;
  optimizers::optimizer* optimizer = nullptr;
  bool stop = false;
  int epochs = 0;
  std::int64_t steps = 0;  ///< batches per epoch; 0 while unknown (a dataset's first epoch)
};

/// Keras' Callback: every hook does nothing unless overridden.
class callback {
 public:
  virtual ~callback() = default;
  virtual void on_train_begin(const logs&) {}
  virtual void on_train_end(const logs&) {}
  virtual void on_epoch_begin(int /*epoch*/, const logs&) {}
  virtual void on_epoch_end(int /*epoch*/, const logs&) {}
  virtual void on_batch_begin(std::int64_t /*batch*/, const logs&) {}
  virtual void on_batch_end(std::int64_t /*batch*/, const logs&) {}
  /// Ends fit after the current epoch (Keras' model.stop_training = True).
  void stop_training() {
    if (ctx_) ctx_->stop = true;
  }
  /// Set by fit before on_train_begin (internal).
  void attach(training_context* ctx) { ctx_ = ctx; }

 protected:
  training_context* context() const noexcept { return ctx_; }

 private:
  training_context* ctx_ = nullptr;
};

/// A callback as fit's options hold it: any callback, by value (copied) or shared (to read its
/// state after fit).
class callback_ref {
 public:
  template <std::derived_from<callback> C>
  callback_ref(C c) : p_(std::make_shared<C>(std::move(c))) {}  // NOLINT: a callback is a callback_ref
  template <std::derived_from<callback> C>
  callback_ref(std::shared_ptr<C> c) : p_(std::move(c)) {}  // NOLINT
  callback* operator->() const noexcept { return p_.get(); }
  callback& operator*() const noexcept { return *p_; }

 private:
  std::shared_ptr<callback> p_;
};

struct early_stopping_options {
  std::string monitor = "val_loss";
  double min_delta = 0;
  int patience = 0;
  std::string mode = "auto";  ///< "min", "max", or "auto": max for accuracies, min otherwise
  bool restore_best_weights = false;
};

/// Stops training when `monitor` has not improved by min_delta for `patience` epochs; with
/// restore_best_weights, the variables go back to the best epoch's values when it stops.
class early_stopping : public callback {
 public:
  explicit early_stopping(early_stopping_options o = {}) : o_(std::move(o)) {
    FG_CHECK(o_.mode == "auto" || o_.mode == "min" || o_.mode == "max", value_error,
             "fg::nn::callbacks::early_stopping: mode must be \"auto\", \"min\" or \"max\", got \"", o_.mode, "\"");
    max_ = o_.mode == "max" || (o_.mode == "auto" && (o_.monitor.find("acc") != std::string::npos ||
                                                      o_.monitor.find("auc") != std::string::npos));
  }
  void on_train_begin(const logs&) override {
    wait_ = 0;
    stopped_epoch_ = -1;
    best_ = max_ ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    best_values_.clear();
  }
  void on_epoch_end(int epoch, const logs& l) override {
    const auto it = l.find(o_.monitor);
    FG_CHECK(it != l.end(), value_error, "fg::nn::callbacks::early_stopping: fit logs no \"", o_.monitor,
             "\" (it logs ", names(l), ")");
    const double current = it->second;
    ++wait_;
    const bool better = max_ ? current - std::fabs(o_.min_delta) > best_ : current + std::fabs(o_.min_delta) < best_;
    if (better) {
      best_ = current;
      best_epoch_ = epoch;
      wait_ = 0;
      if (o_.restore_best_weights && context()) {
        best_values_.clear();
        for (const named_variable& v : context()->variables)
          best_values_.push_back(std::visit([](const auto& x) -> std::variant<tensor<float>, tensor<double>> { return x.peek(); }, v.value));
      }
      return;
    }
    if (wait_ >= o_.patience && epoch > 0) {
      stopped_epoch_ = epoch;
      stop_training();
      if (o_.restore_best_weights && context() && !best_values_.empty())
        for (std::size_t i = 0; i < best_values_.size(); ++i)
          std::visit(
              [&](auto& var) {
                using T = typename std::decay_t<decltype(var)>::value_type;
                var.assign(std::get<tensor<T>>(best_values_[i]));
              },
              context()->variables[i].value);
    }
  }
  /// The epoch training stopped after (-1 when it ran to the end), and the best one.
  int stopped_epoch() const noexcept { return stopped_epoch_; }
  int best_epoch() const noexcept { return best_epoch_; }

 private:
  static std::string names(const logs& l) {
    std::string s;
    for (const auto& [k, v] : l) s += (s.empty() ? "" : ", ") + k;
    return s;
  }
  early_stopping_options o_;
  bool max_ = false;
  int wait_ = 0, stopped_epoch_ = -1, best_epoch_ = -1;
  double best_ = 0;
  std::vector<std::variant<tensor<float>, tensor<double>>> best_values_;
};

/// A callback made of functions (Keras' LambdaCallback); each may be left empty.
class lambda_callback : public callback {
 public:
  struct functions {
    std::function<void(int, const logs&)> on_epoch_begin = {}, on_epoch_end = {};
    std::function<void(std::int64_t, const logs&)> on_batch_begin = {}, on_batch_end = {};
    std::function<void(const logs&)> on_train_begin = {}, on_train_end = {};
  };
  explicit lambda_callback(functions f) : f_(std::move(f)) {}
  void on_train_begin(const logs& l) override { call(f_.on_train_begin, l); }
  void on_train_end(const logs& l) override { call(f_.on_train_end, l); }
  void on_epoch_begin(int e, const logs& l) override { call(f_.on_epoch_begin, e, l); }
  void on_epoch_end(int e, const logs& l) override { call(f_.on_epoch_end, e, l); }
  void on_batch_begin(std::int64_t b, const logs& l) override { call(f_.on_batch_begin, b, l); }
  void on_batch_end(std::int64_t b, const logs& l) override { call(f_.on_batch_end, b, l); }

 private:
  template <class F, class... A>
  static void call(const F& f, const A&... a) {
    if (f) f(a...);
  }
  functions f_;
};

/// Writes each epoch's logs to a CSV file (Keras' CSVLogger): a header "epoch,<names>", then one
/// row per epoch.
class csv_logger : public callback {
 public:
  explicit csv_logger(std::string filename, char separator = ',', bool append = false)
      : file_(std::move(filename)), sep_(separator), append_(append) {}
  void on_train_begin(const logs&) override {
    out_ = std::make_shared<std::ofstream>(file_, append_ ? std::ios::app : std::ios::trunc);
    FG_CHECK(out_->good(), value_error, "fg::nn::callbacks::csv_logger: cannot open '", file_, "' for writing");
    header_ = append_;
  }
  void on_epoch_end(int epoch, const logs& l) override {
    if (!header_) {
      *out_ << "epoch";
      for (const auto& [k, v] : l) *out_ << sep_ << k;
      *out_ << '\n';
      header_ = true;
    }
    *out_ << epoch;
    for (const auto& [k, v] : l) *out_ << sep_ << v;
    *out_ << '\n';
    out_->flush();
  }
  void on_train_end(const logs&) override { out_.reset(); }

 private:
  std::string file_;
  char sep_;
  bool append_, header_ = false;
  std::shared_ptr<std::ofstream> out_;
};

/// Sets the optimizer's learning rate at the start of each epoch to schedule(epoch, rate)
/// (Keras' LearningRateScheduler).
class learning_rate_scheduler : public callback {
 public:
  explicit learning_rate_scheduler(std::function<double(int, double)> schedule) : f_(std::move(schedule)) {}
  void on_epoch_begin(int epoch, const logs&) override {
    if (!context() || !context()->optimizer) return;
    optimizers::optimizer& o = *context()->optimizer;
    o.set_learning_rate(f_(epoch, o.current_learning_rate()));
  }

 private:
  std::function<double(int, double)> f_;
};

/// The progress logger of fit's `verbose`: with 1 on a terminal, TensorFlow 2's bar,
/// `469/469 [==============================] - 2s 4ms/step - loss: 0.4120 - accuracy: 0.8531`,
/// 30 wide, redrawn in place at most every 0.05 s with the ETA while the epoch runs; with 1
/// elsewhere or with 2, one line per epoch; with 0, nothing. Its clock and output can be
/// replaced (tests use a fake clock).
class progress_logger : public callback {
 public:
  using clock_fn = std::function<double()>;  ///< seconds
  progress_logger(int verbose, bool terminal, std::ostream& os = std::cout, clock_fn clock = {})
      : verbose_(verbose), terminal_(terminal), os_(&os), clock_(clock ? std::move(clock) : steady) {}
  void on_epoch_begin(int epoch, const logs&) override {
    if (verbose_ == 0) return;
    if (context()) *os_ << "Epoch " << epoch + 1 << "/" << context()->epochs << "\n";
    start_ = last_ = clock_();
    seen_ = 0;
  }
  void on_batch_end(std::int64_t batch, const logs& l) override {
    seen_ = batch + 1;
    if (verbose_ != 1 || !terminal_ || !context()) return;
    const double now = clock_();
    if (context()->steps <= 0) {  // a dataset's first epoch: its length is not known yet
      if (now - last_ < 0.05) return;
      last_ = now;
      const std::string d = std::to_string(seen_);
      const double per = (now - start_) / static_cast<double>(seen_);
      *os_ << "\r" << std::string(7 - std::min<std::size_t>(7, d.size()), ' ') << d << "/Unknown - " << seconds(now - start_)
           << " " << per_step(per) << values(l) << std::flush;
      return;
    }
    if (seen_ < context()->steps && now - last_ < 0.05) return;
    last_ = now;
    if (seen_ < context()->steps) {
      const double per = (now - start_) / static_cast<double>(seen_);
      *os_ << "\r" << bar(seen_) << " - ETA: " << eta(per * static_cast<double>(context()->steps - seen_)) << values(l)
           << std::flush;
    }
  }
  void on_epoch_end(int, const logs& l) override {
    if (verbose_ == 0 || !context()) return;
    const double took = clock_() - start_;
    const double per = seen_ > 0 ? took / static_cast<double>(seen_) : 0;
    const std::int64_t steps = context()->steps;
    if (verbose_ == 1 && terminal_)
      *os_ << "\r" << bar(steps) << " - " << seconds(took) << " " << per_step(per) << values(l) << "\n";
    else
      *os_ << steps << "/" << steps << " - " << seconds(took) << " - " << per_step(per) << values(l) << "\n";
    os_->flush();
  }

  /// The bar for `done` of the epoch's steps.
  std::string bar(std::int64_t done) const {
    const std::int64_t steps = context() ? context()->steps : done;
    const std::string n = std::to_string(steps);
    std::string d = std::to_string(done);
    std::string s = std::string(n.size() - std::min(n.size(), d.size()), ' ') + d + "/" + n + " [";
    const int width = 30;
    const int filled = steps > 0 ? static_cast<int>(width * static_cast<double>(done) / static_cast<double>(steps)) : width;
    if (filled > 0) s += std::string(static_cast<std::size_t>(filled - 1), '=') + (done < steps ? ">" : "=");
    s += std::string(static_cast<std::size_t>(width - std::max(filled, 0)), '.');
    return s + "]";
  }

 private:
  static double steady() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  static std::string values(const logs& l) {
    std::string s;
    char buf[64];
    for (const auto& [k, v] : l) {
      std::snprintf(buf, sizeof buf, std::fabs(v) > 1e-3 || v == 0 ? " - %s: %.4f" : " - %s: %.4e", k.c_str(), v);
      s += buf;
    }
    return s;
  }
  static std::string seconds(double t) { return std::to_string(static_cast<long long>(std::llround(t))) + "s"; }
  static std::string per_step(double t) {
    char buf[32];
    if (t >= 1) std::snprintf(buf, sizeof buf, "%.0fs/step", t);
    else if (t >= 1e-3) std::snprintf(buf, sizeof buf, "%.0fms/step", t * 1e3);
    else std::snprintf(buf, sizeof buf, "%.0fus/step", t * 1e6);
    return buf;
  }
  /// TensorFlow 2's ETA: whole seconds, truncated; m:ss past a minute, h:mm:ss past an hour.
  static std::string eta(double t) {
    const auto s = static_cast<long long>(t);
    char buf[32];
    if (t > 3600) std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, (s % 3600) / 60, s % 60);
    else if (t > 60) std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
    else std::snprintf(buf, sizeof buf, "%llds", s);
    return buf;
  }
  int verbose_;
  bool terminal_;
  std::ostream* os_;
  clock_fn clock_;
  double start_ = 0, last_ = 0;
  std::int64_t seen_ = 0;
};
}  // namespace callbacks
}  // namespace fusegrad::nn
