#pragma once
/// \file fg::train::checkpoint_manager: TensorFlow's tf.train.CheckpointManager. It saves a
/// checkpoint as "<directory>/<checkpoint_name>-<n>" (n the checkpoint's save count), keeps the
/// newest max_to_keep of them, deleting older files, and keeps the directory's index file
/// `checkpoint` (train/checkpoint_state.hpp) listing those kept:
///
///     fg::train::checkpoint_manager manager(ckpt, "runs", 2);
///     manager.restore_or_initialize();     // the latest checkpoint in runs/, if any
///     ...  manager.save();                  // runs/ckpt-1, runs/ckpt-2, runs/ckpt-3 (ckpt-1 deleted)

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "checkpoint.hpp"
#include "checkpoint_state.hpp"

namespace fusegrad::train {

class checkpoint_manager {
 public:
  /// Manages the checkpoints of `ckpt` in `directory` (made on the first save), keeping the
  /// newest `max_to_keep` (all when nothing is given). Checkpoints an index in `directory`
  /// already lists count as kept, oldest first, as TensorFlow recovers them.
  checkpoint_manager(train::checkpoint ckpt, std::string directory, std::optional<int> max_to_keep,
                     std::string checkpoint_name = "ckpt")
      : ckpt_(std::move(ckpt)),
        dir_(std::move(directory)),
        max_to_keep_(max_to_keep),
        name_(std::move(checkpoint_name)) {
    FG_CHECK(!max_to_keep || *max_to_keep > 0, value_error,
             "fg::train::checkpoint_manager: max_to_keep must be at "
             "least 1, got ",
             max_to_keep.value_or(0), " (give no value to keep every checkpoint)");
    FG_CHECK(!name_.empty() && name_.find('/') == std::string::npos, value_error,
             "fg::train::checkpoint_manager: bad checkpoint_name '", name_, "': not empty and without '/'");
    if (const std::optional<checkpoint_state> s = get_checkpoint_state(dir_)) {
      kept_ = s->all_model_checkpoint_paths;
      times_ = s->all_model_checkpoint_timestamps;
      times_.resize(kept_.size(), now());
      last_preserved_ = s->last_preserved_timestamp;
    } else {
      last_preserved_ = now();
    }
  }

  /// Saves the checkpoint as "<directory>/<checkpoint_name>-<n>", n being checkpoint_number when
  /// given, else the checkpoint's new save count; updates the index, then deletes the files of
  /// checkpoints beyond max_to_keep, oldest first. Returns the path saved.
  std::string save(std::optional<std::int64_t> checkpoint_number = std::nullopt) {
    namespace fs = std::filesystem;
    const std::string path = ckpt_.save_counted((fs::path(dir_) / name_).string(), checkpoint_number);
    for (std::size_t i = 0; i < kept_.size(); ++i)
      if (kept_[i] == path) {
        kept_.erase(kept_.begin() + static_cast<std::ptrdiff_t>(i));
        times_.erase(times_.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
    kept_.push_back(path);
    times_.push_back(now());
    std::vector<std::string> deleted;
    while (max_to_keep_ && kept_.size() > static_cast<std::size_t>(*max_to_keep_)) {
      deleted.push_back(kept_.front());
      kept_.erase(kept_.begin());
      times_.erase(times_.begin());
    }
    std::vector<std::string> names;
    for (const std::string& p : kept_) names.push_back(relative(p));
    impl::write_checkpoint_state(dir_, relative(path), names, times_, last_preserved_,
                                 "fg::train::checkpoint_manager::save");
    for (const std::string& p : deleted) {  // after the index no longer names them
      std::error_code ec;
      fs::remove(impl::checkpoint_file(p), ec);
      FG_CHECK(!ec, value_error, "fg::train::checkpoint_manager::save: saved '", path, "' but cannot delete the old '",
               impl::checkpoint_file(p), "': ", ec.message());
    }
    return path;
  }

  /// The newest checkpoint kept, or nothing.
  std::optional<std::string> latest_checkpoint() const {
    return kept_.empty() ? std::nullopt : std::optional<std::string>(kept_.back());
  }
  /// The checkpoints kept, oldest first.
  const std::vector<std::string>& checkpoints() const noexcept { return kept_; }
  /// The directory it saves in.
  const std::string& directory() const noexcept { return dir_; }
  /// The checkpoint it saves (a handle to the one given).
  const train::checkpoint& checkpoint() const noexcept { return ckpt_; }
  /// Restores the newest checkpoint kept and returns its path; nothing (and no change) when
  /// there is none, for the caller to initialize from scratch.
  std::optional<std::string> restore_or_initialize(const restore_options& o = {}) {
    const std::optional<std::string> latest = latest_checkpoint();
    if (latest) ckpt_.restore(*latest, o);
    return latest;
  }

 private:
  static double now() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  }
  /// p as the index names it: relative to the directory when inside it.
  std::string relative(const std::string& p) const {
    const std::filesystem::path r = std::filesystem::path(p).lexically_relative(dir_);
    return r.empty() || *r.begin() == ".." ? p : r.string();
  }

  train::checkpoint ckpt_;
  std::string dir_;
  std::optional<int> max_to_keep_;
  std::string name_;
  std::vector<std::string> kept_;
  std::vector<double> times_;
  double last_preserved_ = 0;
};
}  // namespace fusegrad::train
