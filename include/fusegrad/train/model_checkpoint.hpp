#pragma once
/// \file fg::train::model_checkpoint: Keras' ModelCheckpoint callback for fit. After each epoch
/// it writes the model's weights to `filepath` as fg::train::save_weights would (Keras 3's layout
/// for a name ending in ".weights.h5", fusegrad's otherwise: Note [weights layouts]), or, with
/// save_best_only, only when the monitored value improved on the best so far. The file is
/// written atomically (Note [hdf5 writing]), so a stop part-way keeps the previous one.
/// `{epoch}` and `{epoch:02d}` in filepath become the epoch's number (from 1), as in Keras.
/// fusegrad saves weights only: Keras' whole-model files (architecture and optimizer) have no
/// counterpart; fg::train::checkpoint saves an optimizer with its slots.

#include <cstdio>
#include <iostream>
#include <limits>
#include <string>
#include <utility>

#include "../io/hdf5.hpp"
#include "../nn/callbacks.hpp"
#include "checkpoint.hpp"
#include "weights.hpp"

namespace fusegrad::train {

struct model_checkpoint_options {
  std::string monitor = "val_loss";  ///< the log compared when save_best_only
  int verbose = 0;                   ///< 1: a line per save, as Keras prints it
  bool save_best_only = false;
  bool save_weights_only = true;  ///< fusegrad saves weights only (false is refused)
  std::string mode = "auto";      ///< "min", "max", or "auto": max for accuracies, min otherwise
};

class model_checkpoint : public nn::callbacks::callback {
 public:
  explicit model_checkpoint(std::string filepath, model_checkpoint_options o = {})
      : path_(std::move(filepath)), o_(std::move(o)) {
    FG_CHECK(o_.save_weights_only, value_error, "fg::train::model_checkpoint: '", path_,
             "': fusegrad saves weights only (load them with fg::train::load_weights); "
             "fg::train::checkpoint saves an optimizer with its slots");
    FG_CHECK(o_.mode == "auto" || o_.mode == "min" || o_.mode == "max", value_error,
             "fg::train::model_checkpoint: mode must be \"auto\", \"min\" or \"max\", got \"", o_.mode, "\"");
    max_ = o_.mode == "max" ||
           (o_.mode == "auto" && (o_.monitor.find("acc") != std::string::npos || o_.monitor.find("auc") != std::string::npos));
    best_ = max_ ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  }

  void on_epoch_end(int epoch, const nn::logs& l) override {
    const std::string file = path_for(epoch);
    if (o_.save_best_only) {
      const auto it = l.find(o_.monitor);
      if (it == l.end()) {  // Keras warns and skips
        std::cerr << "fg::train::model_checkpoint: can save the best model only with " << o_.monitor
                  << " available; skipping\n";
        return;
      }
      const double v = it->second;
      if (!(max_ ? v > best_ : v < best_)) {
        if (o_.verbose) std::printf("\nEpoch %d: %s did not improve from %.5f\n", epoch + 1, o_.monitor.c_str(), best_);
        return;
      }
      if (o_.verbose)
        std::printf("\nEpoch %d: %s improved from %.5f to %.5f, saving model to %s\n", epoch + 1, o_.monitor.c_str(),
                    best_, v, file.c_str());
      best_ = v;
    } else if (o_.verbose) {
      std::printf("\nEpoch %d: saving model to %s\n", epoch + 1, file.c_str());
    }
    save(file);
    ++saves_;
  }

  /// The best monitored value so far (save_best_only), and how many files were written.
  double best() const noexcept { return best_; }
  int saves() const noexcept { return saves_; }

  /// filepath with `{epoch}` / `{epoch:0Nd}` replaced by epoch + 1.
  std::string path_for(int epoch) const {
    std::string out = path_;
    for (std::size_t at = out.find("{epoch"); at != std::string::npos; at = out.find("{epoch", at)) {
      const std::size_t close = out.find('}', at);
      FG_CHECK(close != std::string::npos, value_error, "fg::train::model_checkpoint: '", path_,
               "': an unclosed {epoch");
      const std::string spec = out.substr(at + 6, close - at - 6);  // "" or ":02d"
      int width = 0;
      FG_CHECK(spec.empty() || (spec.size() >= 3 && spec[0] == ':' && spec.back() == 'd' &&
                                std::sscanf(spec.c_str() + 1, "%d", &width) == 1),
               value_error, "fg::train::model_checkpoint: '", path_, "': {epoch", spec,
               "} is not a format fusegrad knows ({epoch} or {epoch:02d})");
      char buf[32];
      std::snprintf(buf, sizeof buf, "%0*d", width, epoch + 1);
      out.replace(at, close - at + 1, buf);
      at += std::string(buf).size();
    }
    return out;
  }

 private:
  void save(const std::string& file) const {
    FG_CHECK(context() != nullptr, value_error, "fg::train::model_checkpoint: used outside fit");
    if (impl::keras_layout(file) && context()->sites) {
      impl::write_weights(context()->sites(true), file, true, "fg::train::model_checkpoint");
      return;
    }
    impl::tracked t;
    for (const nn::named_variable& v : context()->variables)
      std::visit([&](const auto& x) { t.values.push_back({v.name, x}); }, v.value);
    FG_CHECK(!t.values.empty(), value_error, "fg::train::model_checkpoint: '", file, "': the model has no variables");
    io::write_hdf5(file, impl::snapshot(t.values), {.attributes = {{"content", "fusegrad weights"}}});
  }

  std::string path_;
  model_checkpoint_options o_;
  bool max_ = false;
  double best_ = 0;
  int saves_ = 0;
};
}  // namespace fusegrad::train
