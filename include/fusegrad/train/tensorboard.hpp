#pragma once
/// \file fg::nn::callbacks::tensorboard: Keras' TensorBoard callback for fit. It writes each
/// epoch's logs through fg::summary into two runs, `<log_dir>/train` (the loss, the metrics and
/// the optimizer's learning rate, as `epoch_loss`, `epoch_accuracy`, `epoch_learning_rate`) and
/// `<log_dir>/validation` (the `val_` logs without the prefix: `epoch_loss`, ...), each at step
/// = the epoch's index; with update_freq "batch" or a number N, also the train logs of every Nth
/// batch as `batch_loss`, ... at the count of batches trained; with histogram_freq N, a
/// histogram of every variable each Nth epoch (`<variable>/histogram`). `tensorboard --logdir
/// <log_dir>` shows the two runs side by side.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "../nn/callbacks.hpp"
#include "summary.hpp"

namespace fusegrad::nn::callbacks {

/// How often the tensorboard callback writes: "epoch" (at each epoch's end), "batch" (after
/// every batch), or a number N (after every Nth batch, and at each epoch's end).
class update_frequency {
 public:
  update_frequency(const char* s) : update_frequency(std::string_view(s)) {}  // NOLINT: "epoch" is a frequency
  update_frequency(std::string_view s) {                                       // NOLINT
    FG_CHECK(s == "epoch" || s == "batch", value_error,
             "fg::nn::callbacks::tensorboard: update_freq must be \"epoch\", \"batch\" or a number of batches, got \"",
             s, "\"");
    batches_ = s == "batch" ? 1 : 0;
  }
  update_frequency(int batches) : update_frequency(static_cast<std::int64_t>(batches)) {}  // NOLINT
  update_frequency(std::int64_t batches) : batches_(batches) {                              // NOLINT
    FG_CHECK(batches > 0, value_error,
             "fg::nn::callbacks::tensorboard: update_freq must be a positive number of batches, \"epoch\" or "
             "\"batch\", got ",
             batches);
  }
  /// The batches between batch-level writes; 0 for "epoch" (none).
  std::int64_t batches() const noexcept { return batches_; }

 private:
  std::int64_t batches_ = 0;
};

struct tensorboard_options {
  std::string log_dir = "logs";
  /// Every how many epochs to write histograms of the variables; 0: never.
  int histogram_freq = 0;
  update_frequency update_freq = "epoch";
};

/// Keras' TensorBoard callback (see the file's comment).
class tensorboard : public callback {
 public:
  explicit tensorboard(tensorboard_options o = {}) : o_(std::move(o)) {
    FG_CHECK(o_.histogram_freq >= 0, value_error, "fg::nn::callbacks::tensorboard: histogram_freq must be 0 or more, got ",
             o_.histogram_freq);
  }

  void on_train_begin(const logs&) override {
    // Each fit writes new files, as a Keras callback does when fit sets its model again.
    train_ = {};
    validation_ = {};
    batches_ = 0;
  }
  void on_train_end(const logs&) override {
    for (::fusegrad::summary::file_writer* w : {&train_, &validation_})
      if (*w) w->close();
  }
  void on_batch_end(std::int64_t, const logs& l) override {
    ++batches_;
    const std::int64_t every = o_.update_freq.batches();
    if (every == 0 || batches_ % every != 0) return;
    ::fusegrad::summary::file_writer& w = writer(train_, "train");
    for (const auto& [name, value] : l) w.scalar("batch_" + name, value, batches_);
  }
  void on_epoch_end(int epoch, const logs& l) override {
    bool any_train = false, any_validation = false;
    for (const auto& [name, value] : l) (name.starts_with("val_") ? any_validation : any_train) = true;
    std::optional<double> rate;
    if (context() && context()->optimizer) rate = context()->optimizer->current_learning_rate();
    if (any_train || rate) {
      ::fusegrad::summary::file_writer& w = writer(train_, "train");
      for (const auto& [name, value] : l)
        if (!name.starts_with("val_")) w.scalar("epoch_" + name, value, epoch);
      if (rate) w.scalar("epoch_learning_rate", *rate, epoch);
    }
    if (any_validation) {
      ::fusegrad::summary::file_writer& w = writer(validation_, "validation");
      for (const auto& [name, value] : l)
        if (name.starts_with("val_")) w.scalar("epoch_" + name.substr(4), value, epoch);
    }
    if (o_.histogram_freq > 0 && epoch % o_.histogram_freq == 0 && context()) {
      ::fusegrad::summary::file_writer& w = writer(train_, "train");
      for (const named_variable& v : context()->variables)
        std::visit([&](const auto& x) { w.histogram(v.name + "/histogram", x.peek(), epoch); }, v.value);
      w.flush();
    }
  }

  /// The directories of the two runs.
  std::string train_dir() const { return (std::filesystem::path(o_.log_dir) / "train").string(); }
  std::string validation_dir() const { return (std::filesystem::path(o_.log_dir) / "validation").string(); }

 private:
  ::fusegrad::summary::file_writer& writer(::fusegrad::summary::file_writer& w, const char* run) {
    if (!w)
      w = ::fusegrad::summary::create_file_writer((std::filesystem::path(o_.log_dir) / run).string());
    return w;
  }

  tensorboard_options o_;
  ::fusegrad::summary::file_writer train_, validation_;
  std::int64_t batches_ = 0;
};
}  // namespace fusegrad::nn::callbacks
