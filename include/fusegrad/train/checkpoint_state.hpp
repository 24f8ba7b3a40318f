#pragma once
/// \file The index of a checkpoint directory, a text file named `checkpoint` as TensorFlow
/// writes it (a CheckpointState in protobuf text format):
///
///     model_checkpoint_path: "ckpt-4"
///     all_model_checkpoint_paths: "ckpt-3"
///     all_model_checkpoint_paths: "ckpt-4"
///     all_model_checkpoint_timestamps: 1732694400.25
///     all_model_checkpoint_timestamps: 1732694460.5
///     last_preserved_timestamp: 1732694390.125
///
/// Paths are checkpoint prefixes (the file is the prefix + ".h5"), relative to the directory.
/// fg::train::get_checkpoint_state and latest_checkpoint read it; checkpoint::save and
/// checkpoint_manager write it atomically (Note [atomic file]).

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "../core/error.hpp"
#include "../io/atomic_file.hpp"

namespace fusegrad::train {

/// What a directory's index says: the latest checkpoint and all those kept, each as a path
/// prefix joined to the directory ("dir/ckpt-4"), and when each was saved (seconds since 1970).
struct checkpoint_state {
  std::string model_checkpoint_path = {};
  std::vector<std::string> all_model_checkpoint_paths = {};
  std::vector<double> all_model_checkpoint_timestamps = {};
  double last_preserved_timestamp = 0;
};

/// The name of a directory's index file.
inline constexpr const char* checkpoint_index_name = "checkpoint";

namespace impl {
/// The HDF5 file of a checkpoint path: the path itself when it ends in ".h5", else the prefix
/// + ".h5".
inline std::string checkpoint_file(const std::string& path) { return path.ends_with(".h5") ? path : path + ".h5"; }

/// s as a protobuf text string: quoted, with '"', '\\' and control bytes escaped.
inline std::string quote(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if (c == '\n')
      out += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20) {
      char b[5];
      std::snprintf(b, sizeof b, "\\%03o", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += b;
    } else
      out += c;
  }
  return out + "\"";
}

/// The shortest text that reads back as v.
inline std::string number_text(double v) {
  char b[32];
  const auto r = std::to_chars(b, b + sizeof b, v);
  return std::string(b, r.ptr);
}

/// Writes a directory's index. Paths are given relative to the directory.
inline void write_checkpoint_state(const std::filesystem::path& dir, const std::string& latest,
                                   const std::vector<std::string>& all, const std::vector<double>& timestamps,
                                   std::optional<double> last_preserved, std::string_view op) {
  std::string text = "model_checkpoint_path: " + quote(latest) + "\n";
  for (const std::string& p : all) text += "all_model_checkpoint_paths: " + quote(p) + "\n";
  for (const double t : timestamps) text += "all_model_checkpoint_timestamps: " + number_text(t) + "\n";
  if (last_preserved) text += "last_preserved_timestamp: " + number_text(*last_preserved) + "\n";
  io::write_atomically((dir / checkpoint_index_name).string(), text, op);
}

/// Reads a quoted protobuf text string at the start of `s`; false when malformed.
inline bool unquote(std::string_view s, std::string& out) {
  if (s.size() < 2 || s.front() != '"' || s.back() != '"') return false;
  out.clear();
  for (std::size_t i = 1; i + 1 < s.size(); ++i) {
    char c = s[i];
    if (c == '"') return false;
    if (c == '\\') {
      if (i + 2 >= s.size()) return false;
      c = s[++i];
      if (c >= '0' && c <= '7') {
        int v = 0;
        for (int k = 0; k < 3 && i + 1 < s.size() && s[i] >= '0' && s[i] <= '7'; ++k, ++i) v = v * 8 + (s[i] - '0');
        --i;
        c = static_cast<char>(v);
      } else if (c == 'n')
        c = '\n';
      else if (c == 't')
        c = '\t';
      else if (c == 'r')
        c = '\r';
      else if (c != '"' && c != '\\' && c != '\'')
        return false;
    }
    out += c;
  }
  return true;
}
}  // namespace impl

/// TensorFlow's tf.train.get_checkpoint_state: what the index file `checkpoint` of directory
/// `dir` says, its paths joined to `dir`; nothing when there is no index. A malformed index
/// throws value_error naming the file and the line.
inline std::optional<checkpoint_state> get_checkpoint_state(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path index = fs::path(dir) / checkpoint_index_name;
  std::error_code ec;
  if (!fs::is_regular_file(index, ec)) return std::nullopt;
  std::ifstream in(index);
  FG_CHECK(in, value_error, "fg::train::get_checkpoint_state: '", index.string(), "': cannot read it");
  checkpoint_state s;
  const auto joined = [&](const std::string& p) {
    return fs::path(p).is_absolute() ? p : (fs::path(dir) / p).string();
  };
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::size_t colon = line.find(':');
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string_view key(line.data(), colon == std::string::npos ? 0 : colon), value;
    if (colon != std::string::npos) {
      value = std::string_view(line).substr(colon + 1);
      while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
      while (!value.empty() && (value.back() == ' ' || value.back() == '\r')) value.remove_suffix(1);
    }
    std::string text;
    double number_value = 0;
    const bool is_path = key == "model_checkpoint_path" || key == "all_model_checkpoint_paths";
    const bool is_time = key == "all_model_checkpoint_timestamps" || key == "last_preserved_timestamp";
    bool ok = colon != std::string::npos && (is_path || is_time);
    if (ok && is_path) ok = impl::unquote(value, text);
    if (ok && is_time) {
      const auto r = std::from_chars(value.data(), value.data() + value.size(), number_value);
      ok = r.ec == std::errc() && r.ptr == value.data() + value.size();
    }
    FG_CHECK(ok, value_error, "fg::train::get_checkpoint_state: '", index.string(), "': line ", number,
             " is not an entry of a checkpoint index: ", line);
    if (key == "model_checkpoint_path")
      s.model_checkpoint_path = joined(text);
    else if (key == "all_model_checkpoint_paths")
      s.all_model_checkpoint_paths.push_back(joined(text));
    else if (key == "all_model_checkpoint_timestamps")
      s.all_model_checkpoint_timestamps.push_back(number_value);
    else
      s.last_preserved_timestamp = number_value;
  }
  return s;
}

/// TensorFlow's tf.train.latest_checkpoint: the path of the newest checkpoint in directory `dir`
/// as its index names it ("dir/ckpt-4", which checkpoint::restore takes), or nothing when there
/// is no index or the file it names does not exist.
inline std::optional<std::string> latest_checkpoint(const std::string& dir) {
  const std::optional<checkpoint_state> s = get_checkpoint_state(dir);
  if (!s || s->model_checkpoint_path.empty()) return std::nullopt;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(impl::checkpoint_file(s->model_checkpoint_path), ec)) return std::nullopt;
  return s->model_checkpoint_path;
}
}  // namespace fusegrad::train
