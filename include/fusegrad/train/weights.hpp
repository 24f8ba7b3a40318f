#pragma once
/// \file fg::train::save_weights / load_weights: a model's variables alone, in the HDF5 format
/// of checkpoints (io/hdf5.hpp), each named by its path as nn::named_variables gives it
/// ("dense_1/kernel"; no object name in front). Keras' model.save_weights and load_weights, for
/// any model fusegrad's walk understands (Note [model walk]); not Keras' .weights.h5 layout.

#include <string>

#include "../io/hdf5.hpp"
#include "checkpoint.hpp"

namespace fusegrad::train {

namespace impl {
/// A model's variables keyed by their paths.
template <class M>
tracked weights_of(const M& model) {
  tracked t;
  for (nn::named_variable& v : nn::named_variables(model))
    std::visit([&](const auto& x) { t.values.push_back({std::move(v.name), x}); }, v.value);
  if (t.values.empty()) t.unbuilt.push_back("model");
  return t;
}
}  // namespace impl

/// Writes model's variables to the HDF5 file `path` (as given), atomically (Note [hdf5
/// writing]). A model without variables (not called yet) is an error.
template <class M>
void save_weights(const M& model, const std::string& path) {
  const impl::tracked t = impl::weights_of(model);
  FG_CHECK(!t.values.empty(), value_error, "fg::train::save_weights: '", path,
           "': the model has no variables yet: a "
           "layer makes its variables on its first call, so call the model once before saving");
  io::write_hdf5(path, impl::snapshot(t.values), {.attributes = {{"content", "fusegrad weights"}}});
}

/// Puts back model's variables from the HDF5 file `path`. The file is read and checked first: a
/// missing, truncated or corrupt file, a variable the file lacks, a type or shape that differs,
/// or a value that no variable takes throws value_error (shape_error when only shapes differ)
/// naming the file and each difference, and changes nothing.
template <class M>
void load_weights(const M& model, const std::string& path) {
  impl::restore_from(io::read_hdf5(path), impl::weights_of(model), {}, nullptr, "fg::train::load_weights", path);
}
}  // namespace fusegrad::train
