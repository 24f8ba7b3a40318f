#pragma once
/// \file fg::train::save_weights / load_weights: Keras' model.save_weights and load_weights, a
/// model's variables alone in an HDF5 file (io/hdf5.hpp), for any model fusegrad's walk
/// understands (Note [model walk]). Two layouts (Note [weights layouts]): a path ending in
/// ".weights.h5" has Keras 3's, which Keras' load_weights reads for the same architecture (and
/// fusegrad reads what Keras writes); any other path has fusegrad's, each variable under its path
/// as nn::named_variables gives it ("dense_1/kernel"; no object name in front). Loading onto a
/// model not called yet defers the values to the layers' first call (Note [deferred restore]).

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../io/hdf5.hpp"
#include "../nn/sequential.hpp"
#include "checkpoint.hpp"

namespace fusegrad::train {

// Note [weights layouts]: fusegrad's layout (any path but "*.weights.h5") names each variable by
// its path in the model walk (Note [model walk]): "sequential/dense_1/kernel", "hidden/bias".
// Keras 3's layout (a path ending in ".weights.h5", as keras.Model.save_weights requires) is
// what Keras writes for the same architecture: a layer's variables are numbered in the layer's
// order under its group, "<group>/vars/0", "<group>/vars/1" (a dense layer's kernel, then its
// bias; batch normalization's gamma, beta, moving_mean, moving_variance), and a group is named
// by where the layer sits, never by the layer's own name:
//   - a sequential's layers lie in its group "layers", each under Keras' snake-case name of its
//     class made unique within the list by a count: "layers/conv2d", "layers/dense",
//     "layers/dense_1"; a std::vector or std::array of layers is such a list too;
//   - a struct is a Keras subclassed model (the model itself) or layer (a member): its members
//     are attributes, visited in name order (names starting with '_' last), each under its
//     name ("dense1/vars/0"); its fg::variable members are its own "vars/0", "vars/1"
//     (trainable ones first, each in declaration order);
//   - Keras' model also has the attribute "layers", the list of every layer among its members in
//     declaration order (lists flattened), visited in its place in the name order: so members
//     named before "layers" are written under their names and the others under
//     "layers/<class name>" ("norm" becomes "layers/batch_normalization"); a struct in such a
//     list needs its Keras class name, `static constexpr const char* keras_class = "Block";`;
//   - a layer or struct reached twice is written once, at the first place in that order (a later
//     place in a list still uses up its name);
//   - every layer and struct has a group "vars", empty for a layer without variables (flatten);
//     a layer's carries the attribute "name", the layer's name.
// A Keras file also holds an "optimizer" group when the model was compiled; load_weights passes
// over it, and save_weights writes none. model_checkpoint writes what save_weights would for
// the same name. A ".weights.h5" file that fusegrad wrote in its own layout is read in that
// layout: its root attributes say so. Keras does not read the root's fusegrad attributes nor the
// datasets' checksums (Note [hdf5 reading]) that fusegrad writes.

namespace impl {
// The walk itself (keras_snake_case, the sites and sites_of) is nn/weight_sites.hpp's.
using nn::impl::join_key;
using nn::impl::keras_snake_case;
using nn::impl::layer_site;
using nn::impl::model_sites;
using nn::impl::sites_of;
using nn::impl::variable_site;

/// Whether `path` asks for Keras' layout.
inline bool keras_layout(const std::string& path) { return path.ends_with(".weights.h5"); }
/// Whether the file at `path` (its name asking for Keras' layout) is one fusegrad wrote in its own
/// layout: a weights file without the attribute "layout".
inline bool fusegrad_layout_file(const std::string& path) {
  const std::map<std::string, std::string> a = io::read_hdf5_attributes(path);
  const auto content = a.find("content");
  return content != a.end() && content->second == "fusegrad weights" && !a.count("layout");
}

/// A layer's variable's name in the file.
inline std::string site_key(const layer_site& s, std::size_t index, const nn::named_variable& w, bool keras) {
  return s.where + "/" + (keras ? std::to_string(index) : w.name);
}

inline train::any_variable to_any(const nn::any_variable& v) {
  return std::visit([](const auto& x) { return train::any_variable(x); }, v);
}
}  // namespace impl

namespace impl {
/// save_weights' writing, from the walk's sites (also model_checkpoint's, through fit's
/// training_context::sites).
inline void write_weights(const model_sites& sites, const std::string& path, bool keras, std::string_view op) {
  FG_CHECK(sites.problem.empty(), value_error, op, ": '", path, "': ", sites.problem);
  io::named_tensors values;
  for (const impl::layer_site& s : sites.layers) {
    const std::vector<nn::named_variable> ws = s.layer->weights();
    for (std::size_t i = 0; i < ws.size(); ++i)
      std::visit([&](const auto& x) { values.insert_or_assign(impl::site_key(s, i, ws[i], keras), x.peek()); },
                 ws[i].value);
  }
  for (const impl::variable_site& v : sites.variables)
    std::visit([&](const auto& x) { values.insert_or_assign(v.key, x.peek()); }, v.var);
  FG_CHECK(!values.empty(), value_error, op, ": '", path,
           "': the model has no variables yet: a "
           "layer makes its variables on its first call, so call the model once before saving");
  io::hdf5_write_options o{.attributes = {{"content", "fusegrad weights"}}};
  if (keras) {
    o.attributes["layout"] = "keras.weights.h5";
    o.groups = sites.groups;
  }
  io::write_hdf5(path, values, o);
}
}  // namespace impl

/// Writes model's variables to the HDF5 file `path` (as given), atomically (Note [hdf5
/// writing]), in Keras 3's layout when `path` ends in ".weights.h5", else in fusegrad's (Note
/// [weights layouts]). A model without variables (not called yet) is an error, as is (in Keras'
/// layout) a model that layout has no names for.
template <class M>
void save_weights(const M& model, const std::string& path) {
  const bool keras = impl::keras_layout(path);
  impl::write_weights(impl::sites_of(model, keras), path, keras, "fg::train::save_weights");
}

/// Puts back model's variables from the HDF5 file `path`, in the layout its name asks for (Note
/// [weights layouts]): a file from Keras' model.save_weights when it ends in ".weights.h5" (its
/// "optimizer" group passed over), unless fusegrad wrote it in its own layout (the file's
/// attributes tell). The file is read and checked first: a missing, truncated or corrupt file,
/// a variable the file lacks, a type or shape that differs, or a value that no variable takes
/// throws value_error (shape_error when only shapes differ) naming the file and each
/// difference, and changes nothing. A layer not called yet (no variables) takes the values
/// the file holds for it at its first call, which checks them then (Note [deferred restore]).
template <class M>
void load_weights(const M& model, const std::string& path) {
  constexpr std::string_view op = "fg::train::load_weights";
  const bool keras = impl::keras_layout(path) && !impl::fusegrad_layout_file(path);
  const impl::model_sites sites = impl::sites_of(model, keras);
  FG_CHECK(sites.problem.empty(), value_error, op, ": '", path, "': ", sites.problem);
  const io::named_tensors file = io::read_hdf5(path);
  impl::restore_plan plan;
  std::vector<std::pair<const nn::layer*, std::vector<nn::deferred_weight>>> deferred;
  const auto take = [&](const std::string& key, const train::any_variable& var) { plan.take(file, key, var); };
  for (const impl::layer_site& s : sites.layers) {
    const std::vector<nn::named_variable> ws = s.layer->weights();
    if (!ws.empty() || s.layer->built()) {
      for (std::size_t i = 0; i < ws.size(); ++i) take(impl::site_key(s, i, ws[i], keras), impl::to_any(ws[i].value));
      continue;
    }
    std::vector<nn::deferred_weight> values;  // Note [deferred restore]
    const std::string prefix = s.where + "/";
    for (auto it = file.lower_bound(prefix); it != file.end() && it->first.starts_with(prefix); ++it) {
      const std::string rest = it->first.substr(prefix.size());
      if (rest.find('/') != std::string::npos) continue;
      if (keras && (rest.empty() || rest.size() > 9 || !std::all_of(rest.begin(), rest.end(), [](char c) {
                      return c >= '0' && c <= '9';
                    })))
        continue;
      plan.consumed.insert(it->first);
      nn::deferred_weight w{.name = keras ? std::string() : rest,
                            .index = keras ? static_cast<std::size_t>(std::stoul(rest)) : 0,
                            .value = {},
                            .origin = "'" + path + "': '" + it->first + "'"};
      if (const auto* f = std::get_if<tensor<float>>(&it->second)) {
        w.value = *f;
      } else if (const auto* g = std::get_if<tensor<double>>(&it->second)) {
        w.value = *g;
      } else {
        plan.problems.push_back("'" + it->first + "' is " + std::string(fusegrad::name(io::dtype_of(it->second))) +
                                " in the file, but a layer's variables are float32 or float64");
        plan.shapes_only = false;
        continue;
      }
      values.push_back(std::move(w));
    }
    deferred.emplace_back(s.layer, std::move(values));
  }
  for (const impl::variable_site& v : sites.variables) take(v.key, impl::to_any(v.var));
  // A Keras file's optimizer group is not the model's (Keras' own load_weights skips it too).
  const bool unused =
      plan.note_unused(file, [&](const std::string& name) { return keras && name.starts_with("optimizer/"); });
  if (!plan.problems.empty()) {
    const std::string what = std::string(op) + ": '" + path + "' does not fit, nothing was restored: " + plan.listed();
    if (plan.shapes_only) throw shape_error(what);
    FG_CHECK(false, value_error, what,
             !unused ? ""
             : keras ? ". The file was read in Keras' layout, as its name ends in '.weights.h5' (Note [weights layouts])"
                     : ". The file was read in fusegrad's layout, as its name does not end in '.weights.h5'");
  }
  plan.assign_all();
  for (auto& [layer, values] : deferred) layer->defer_weights(std::move(values));
}
}  // namespace fusegrad::train
