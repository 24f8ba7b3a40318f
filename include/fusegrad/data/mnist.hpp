#pragma once
/// \file fg::data::mnist::load_data: image classification data in MNIST's layout, four IDX files
/// (gzip-compressed or plain) in one directory: train-images-idx3-ubyte, train-labels-idx1-ubyte,
/// t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte, each with ".gz" or without. Gives what
/// tf.keras.datasets.mnist.load_data() gives, with int32 for Keras' uint8 (fusegrad has no
/// uint8): images (samples, rows, columns) with the files' pixel values, labels (samples) of
/// class indices, the type sparse_categorical_crossentropy takes. Nothing is downloaded. Link
/// with -lz.

#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>

#include "../core/error.hpp"
#include "../core/tensor.hpp"
#include "load_idx.hpp"

namespace fusegrad::data {

/// Images and their class labels, Keras' (x, y): images (samples, rows, columns), labels
/// (samples).
struct labelled_images {
  tensor<std::int32_t> images = {};
  tensor<std::int32_t> labels = {};
};

/// A training split and a test split, Keras' ((x_train, y_train), (x_test, y_test)):
/// `auto [train, test] = load_data(); auto [x, y] = train;`.
struct train_test_split {
  labelled_images train = {};
  labelled_images test = {};
};

namespace impl {
/// dir/name.gz, else dir/name; fg::value_error naming both (and `hint`) when neither is a file.
inline std::filesystem::path find_idx_file(const std::filesystem::path& dir, const std::string& name, const char* who,
                                           const char* hint) {
  std::error_code ec;
  const std::filesystem::path gz = dir / (name + ".gz"), plain = dir / name;
  if (std::filesystem::exists(gz, ec)) return gz;
  if (std::filesystem::exists(plain, ec)) return plain;
  FG_CHECK(false, value_error, who, ": no file '", gz.string(), "' (nor '", plain.string(), "')", hint);
  return {};
}

/// The images and labels of one split ("train" or "t10k"), checked to match.
inline labelled_images load_labelled_images(const std::filesystem::path& dir, const std::string& split,
                                            const char* who, const char* hint) {
  const std::filesystem::path ip = find_idx_file(dir, split + "-images-idx3-ubyte", who, hint);
  const std::filesystem::path lp = find_idx_file(dir, split + "-labels-idx1-ubyte", who, hint);
  labelled_images out{load_idx<std::int32_t>(ip), load_idx<std::int32_t>(lp)};
  FG_CHECK(out.images.rank() == 3, shape_error, who, ": '", ip.string(),
           "' should hold images of shape (samples, rows, columns), found shape ", out.images.shape());
  FG_CHECK(out.labels.rank() == 1, shape_error, who, ": '", lp.string(),
           "' should hold labels of shape (samples,), found shape ", out.labels.shape());
  FG_CHECK(out.labels.shape()[0] == out.images.shape()[0], shape_error, who, ": '", lp.string(), "' holds ",
           out.labels.shape()[0], " labels but '", ip.string(), "' holds ", out.images.shape()[0],
           " images; the counts must match");
  return out;
}

/// Both splits from dir, their image sizes checked to match.
inline train_test_split load_mnist_layout(const std::filesystem::path& dir, const char* who, const char* hint) {
  train_test_split out{load_labelled_images(dir, "train", who, hint), load_labelled_images(dir, "t10k", who, hint)};
  const fg::shape &a = out.train.images.shape(), &b = out.test.images.shape();
  FG_CHECK(a[1] == b[1] && a[2] == b[2], shape_error, who, ": in '", dir.string(), "' the training images are ",
           a[1], "x", a[2], " but the test images are ", b[1], "x", b[2]);
  return out;
}
}  // namespace impl

namespace mnist {
/// Reads the four MNIST-layout IDX files from `directory` (there is no default directory).
inline train_test_split load_data(const std::filesystem::path& directory) {
  return impl::load_mnist_layout(directory, "fg::data::mnist::load_data", "");
}
}  // namespace mnist

}  // namespace fusegrad::data
