#pragma once
/// \file fg::train::checkpoint: TensorFlow's tf.train.Checkpoint. It tracks named objects
/// (variables, models, optimizers: train/trackable.hpp), saves their variables to one HDF5 file
/// per save (io/hdf5.hpp) and restores them, the optimizers' step counters and slots included,
/// so that training resumed from a checkpoint runs as if it had never stopped:
///
///     fg::train::checkpoint ckpt{{"model", model}, {"optimizer", opt}, {"step", step}};
///     const std::string path = ckpt.save("runs/ckpt");   // "runs/ckpt-1", the file runs/ckpt-1.h5
///     ckpt.restore(fg::train::latest_checkpoint("runs"));
///
/// The file layout, what restore checks and how it differs from TensorFlow: docs/checkpoints.md
/// and Note [checkpoint keys].

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "../io/hdf5.hpp"
#include "checkpoint_state.hpp"
#include "trackable.hpp"

namespace fusegrad::train {

// Note [checkpoint keys]: each variable is a dataset named by its object's name and its path
// within the object: "step" (a variable), "model/dense_1/kernel" (a model; the path as
// nn::named_variables gives it), "optimizer/iteration" (an optimizer's step counter). An
// optimizer's slot is named by the variable it belongs to, as TensorFlow attaches a slot to
// its variable: "optimizer/slots/model/dense_1/kernel/momentum", so that it finds its
// variable again in a new process, where the optimizer has made no slots yet and variables
// have new identities. Slots of variables that no object of the checkpoint tracks are not
// saved (as in TensorFlow). "save_counter" holds the number of saves.

/// checkpoint::restore's options.
struct restore_options {
  /// Pass over values in the file that no object here takes (TensorFlow's expect_partial())
  /// instead of failing. Variables here that the file lacks are an error either way.
  bool expect_partial = false;
};

namespace impl {
/// A value of a checkpoint: its dataset name and its variable.
struct keyed_variable {
  std::string key;
  any_variable var;
};
/// A float variable whose slots an optimizer may not have made yet: restore makes those that
/// the file holds under prefix ("optimizer/slots/model/dense/kernel/").
struct slot_owner {
  optimizers::optimizer* opt;
  std::string prefix;
  any_variable owner;
};
/// What a checkpoint's objects hold now (Note [checkpoint keys]).
struct tracked {
  std::vector<keyed_variable> values;
  std::vector<slot_owner> owners;
  std::vector<std::string> unbuilt;  ///< models without variables (not called yet)
};

inline fg::dtype dtype_of(const any_variable& v) {
  return std::visit([](const auto& x) { return x.dtype(); }, v);
}
inline fg::shape shape_of(const any_variable& v) {
  return std::visit([](const auto& x) { return x.shape(); }, v);
}

inline tracked track(const std::vector<trackable>& objects) {
  tracked t;
  std::vector<std::pair<std::string, any_variable>> owners;  // float variables, each under its first key
  std::unordered_set<tensor_id> seen;
  for (const trackable& o : objects) {
    if (o.kind() == trackable_kind::optimizer) continue;
    std::vector<std::pair<std::string, any_variable>> vars = o.variables();
    if (o.kind() == trackable_kind::model && vars.empty()) t.unbuilt.push_back(o.name());
    for (auto& [path, v] : vars) {
      std::string key = path.empty() ? o.name() : o.name() + "/" + path;
      const bool floating = std::holds_alternative<variable<float>>(v) || std::holds_alternative<variable<double>>(v);
      if (floating && seen.insert(std::visit([](const auto& x) { return x.id(); }, v)).second)
        owners.emplace_back(key, v);
      t.values.push_back({std::move(key), std::move(v)});
    }
  }
  for (const trackable& o : objects) {
    optimizers::optimizer* opt = o.optimizer();
    if (!opt) continue;
    t.values.push_back({o.name() + "/iteration", std::get<variable<std::int64_t>>(opt->variables().front().value)});
    for (const auto& [key, v] : owners) {
      const std::string prefix = o.name() + "/slots/" + key + "/";
      std::visit(
          [&](const auto& x) {
            if constexpr (std::is_floating_point_v<typename std::decay_t<decltype(x)>::value_type>)
              for (const optimizers::slot_variable& s : opt->slots(x))
                std::visit([&](const auto& sv) { t.values.push_back({prefix + s.name, sv}); }, s.value);
          },
          v);
      t.owners.push_back({opt, prefix, v});
    }
  }
  return t;
}

/// The values of `values` now, by key.
inline io::named_tensors snapshot(const std::vector<keyed_variable>& values) {
  io::named_tensors out;
  for (const keyed_variable& kv : values)  // no structured binding: clang before 16 cannot capture one
    std::visit([&](const auto& x) { out.insert_or_assign(kv.key, x.peek()); }, kv.var);
  return out;
}

/// What a restore will do once everything is checked.
struct restore_plan {
  std::vector<std::pair<any_variable, io::any_tensor>> assign;
  std::vector<std::tuple<optimizers::optimizer*, any_variable, std::string, io::any_tensor>> make_slots;
  std::vector<std::string> problems;
  bool shapes_only = true;  ///< every problem a shape that differs (then the error is a shape_error)

  /// Whether the file's value fits a variable of type d and shape s; notes the problem if not.
  bool fits(const std::string& key, const io::any_tensor& value, fg::dtype d, const fg::shape& s) {
    if (io::dtype_of(value) != d) {
      problems.push_back("'" + key + "' is " + std::string(fusegrad::name(io::dtype_of(value))) + " in the file but " +
                         std::string(fusegrad::name(d)) + " here");
      shapes_only = false;
      return false;
    }
    if (io::shape_of(value) != s) {
      problems.push_back("'" + key + "' has shape " + io::shape_of(value).str() + " in the file but " + s.str() +
                         " here");
      return false;
    }
    return true;
  }
  /// Takes the file's value `key` for var: a missing key is a problem; a present one counts as
  /// consumed and is planned for assignment when it fits.
  void take(const io::named_tensors& file, const std::string& key, const any_variable& var) {
    const auto it = file.find(key);
    const fg::dtype d = dtype_of(var);
    const fg::shape s = shape_of(var);
    if (it == file.end()) {
      problems.push_back("'" + key + "' (" + std::string(fusegrad::name(d)) + ", shape " + s.str() +
                         ") is not in the file");
      shapes_only = false;
      return;
    }
    consumed.insert(key);
    if (fits(key, it->second, d, s)) assign.emplace_back(var, it->second);
  }
  /// Notes each name of the file that nothing consumed, unless `skip(name)`; whether there was one.
  template <class Skip>
  bool note_unused(const io::named_tensors& file, Skip skip) {
    bool any = false;
    for (const auto& entry : file)
      if (!consumed.count(entry.first) && !skip(entry.first)) {
        any = true;
        shapes_only = false;
        problems.push_back("'" + entry.first + "' in the file matches nothing here");
      }
    return any;
  }
  /// The first eight problems, joined for an error message.
  std::string listed() const {
    std::string list;
    for (std::size_t i = 0; i < problems.size() && i < 8; ++i) list += (i ? "; " : "") + problems[i];
    if (problems.size() > 8) list += "; and " + std::to_string(problems.size() - 8) + " more";
    return list;
  }
  /// Gives each planned variable its value (on the variable's device).
  void assign_all() const {
    for (const auto& a : assign) std::visit([&](const auto& x) { put(x, a.second); }, a.first);
  }
  template <class V>
  static void put(const V& var, const io::any_tensor& value) {
    using T = typename V::value_type;
    auto v = var;
    v.assign(std::get<tensor<T>>(value).to(var.peek().device()));
  }

  std::set<std::string> consumed;  ///< the file's names that a value here takes
};

/// Checks every value against the file's (values, slots the optimizers have not made yet, and
/// what the file holds beyond them), then, only when all fit, makes the missing slots and
/// assigns every variable. `save_counter`, when given, takes the file's "save_counter" if any.
inline void restore_from(const io::named_tensors& file, const tracked& t, const restore_options& o,
                         variable<std::int64_t>* save_counter, std::string_view op, const std::string& path) {
  restore_plan plan;
  for (const auto& [key, var] : t.values) plan.take(file, key, var);
  for (const auto& [opt, prefix, owner] : t.owners)
    for (auto it = file.lower_bound(prefix); it != file.end() && it->first.starts_with(prefix); ++it) {
      const std::string slot = it->first.substr(prefix.size());
      if (plan.consumed.count(it->first) || slot.find('/') != std::string::npos) continue;
      plan.consumed.insert(it->first);
      if (plan.fits(it->first, it->second, dtype_of(owner), shape_of(owner)))
        plan.make_slots.emplace_back(opt, owner, slot, it->second);
    }
  if (const auto it = file.find("save_counter"); save_counter && it != file.end()) {
    plan.consumed.insert(it->first);
    if (plan.fits(it->first, it->second, fg::dtype::int64, fg::shape{}))
      plan.assign.emplace_back(*save_counter, it->second);
  }
  const bool unused = plan.note_unused(file, [&](const std::string&) { return o.expect_partial; });
  if (!plan.problems.empty()) {
    const std::string list = plan.listed();
    std::string hint;
    if (unused) hint += ". To restore part of a checkpoint, pass {.expect_partial = true}";
    for (const std::string& m : t.unbuilt)
      hint += ". The model '" + m +
              "' has no variables yet: a layer makes its variables on its first call, so call "
              "the model once (on input of the training shape) before restoring";
    if (plan.shapes_only)
      throw shape_error(std::string(op) + ": '" + path + "' does not fit, nothing was restored: " + list);
    FG_CHECK(false, value_error, op, ": '", path, "' does not fit, nothing was restored: ", list, hint);
  }
  for (const auto& made : plan.make_slots)  // (optimizer, owner, slot name, value)
    std::visit(
        [&](const auto& x) {
          if constexpr (std::is_floating_point_v<typename std::decay_t<decltype(x)>::value_type>)
            restore_plan::put(std::get<0>(made)->add_slot(x, std::get<2>(made)), std::get<3>(made));
        },
        std::get<1>(made));
  plan.assign_all();
}
}  // namespace impl

class checkpoint_manager;

/// TensorFlow's tf.train.Checkpoint. A handle: copies share the objects and the save counter.
class checkpoint {
 public:
  /// The objects to track, each under its name: {{"model", model}, {"optimizer", opt},
  /// {"step", step}}. A name is not empty, has no '/', is not "save_counter" and is unique.
  checkpoint(std::initializer_list<trackable> objects) : checkpoint(std::vector<trackable>(objects)) {}
  explicit checkpoint(std::vector<trackable> objects) : s_(std::make_shared<state>()) {
    for (std::size_t i = 0; i < objects.size(); ++i) {
      const std::string& n = objects[i].name();
      FG_CHECK(!n.empty() && n.find('/') == std::string::npos && n != "save_counter", value_error,
               "fg::train::checkpoint: bad object name '", n,
               "': a name is not empty, has no '/' and is not "
               "'save_counter'");
      for (std::size_t j = 0; j < i; ++j)
        FG_CHECK(objects[j].name() != n, value_error, "fg::train::checkpoint: two objects are named '", n, "'");
    }
    s_->objects = std::move(objects);
  }

  /// tf.train.Checkpoint.save: counts the save, writes the file of "<file_prefix>-<count>"
  /// (the HDF5 file "<file_prefix>-<count>.h5", atomically: Note [hdf5 writing]), making
  /// its directory if need be, names it as the latest in that directory's index file
  /// `checkpoint`, and returns the path "<file_prefix>-<count>" (what restore takes). A failed
  /// save changes nothing, the count included.
  std::string save(const std::string& file_prefix) {
    const std::string path = save_counted(file_prefix, std::nullopt);
    const std::filesystem::path p(path);
    const std::string name = p.filename().string();
    impl::write_checkpoint_state(p.has_parent_path() ? p.parent_path() : std::filesystem::path("."), name, {name}, {},
                                 std::nullopt, "fg::train::checkpoint::save");
    return path;
  }
  /// tf.train.Checkpoint.write: writes the checkpoint to `path` (+ ".h5" unless it ends so),
  /// without counting it or touching an index; returns `path`.
  std::string write(const std::string& path) const {
    io::named_tensors values = impl::snapshot(impl::track(s_->objects).values);
    values.insert_or_assign("save_counter", s_->save_counter.peek());
    io::write_hdf5(impl::checkpoint_file(path), values, {.attributes = {{"content", "fusegrad checkpoint"}}});
    return path;
  }
  /// tf.train.Checkpoint.restore: puts back every tracked value from the checkpoint at `path`
  /// (a prefix as save returns it, or the .h5 file), the optimizers' step counters and slots and
  /// the save counter included. The whole file is read and checked before any variable changes:
  /// a missing, truncated or corrupt file, a variable the file lacks, a type or shape that
  /// differs, or (unless o.expect_partial) a value that nothing here takes throws value_error
  /// (shape_error when only shapes differ) naming the file and each difference, and restores
  /// nothing. Slots the file holds for an optimizer that has not made them yet are made.
  void restore(const std::string& path, const restore_options& o = {}) {
    const std::string file = impl::checkpoint_file(path);
    impl::restore_from(io::read_hdf5(file), impl::track(s_->objects), o, &s_->save_counter,
                       "fg::train::checkpoint::restore", file);
  }
  void restore(const char* path, const restore_options& o = {}) { restore(std::string(path), o); }
  /// restore(*path) when there is a path (latest_checkpoint's answer); nothing, returning
  /// false, when there is none (as TensorFlow's restore(None)).
  bool restore(const std::optional<std::string>& path, const restore_options& o = {}) {
    if (!path) return false;
    restore(*path, o);
    return true;
  }

  /// The number of saves (TensorFlow's save_counter), restored with the rest.
  std::int64_t save_counter() const { return s_->save_counter.peek().cpu().item(); }
  /// The tracked objects, in the order given.
  const std::vector<trackable>& objects() const noexcept { return s_->objects; }

 private:
  friend class checkpoint_manager;
  /// Counts a save and writes "<file_prefix>-<number, else the new count>"; the count is put
  /// back if the write fails.
  std::string save_counted(const std::string& file_prefix, std::optional<std::int64_t> number) {
    const std::int64_t before = save_counter();
    const std::string path = file_prefix + "-" + std::to_string(number ? *number : before + 1);
    const std::filesystem::path dir = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!dir.empty()) std::filesystem::create_directories(dir, ec);
    FG_CHECK(!ec, value_error, "fg::train::checkpoint::save: cannot make the directory '", dir.string(),
             "': ", ec.message());
    s_->save_counter.assign(tensor<std::int64_t>(before + 1));
    try {
      write(path);
    } catch (...) {
      s_->save_counter.assign(tensor<std::int64_t>(before));
      throw;
    }
    return path;
  }

  struct state {
    std::vector<trackable> objects;
    variable<std::int64_t> save_counter{std::int64_t{0}, "save_counter", false};
  };
  std::shared_ptr<state> s_;
};
}  // namespace fusegrad::train
