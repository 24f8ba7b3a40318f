#pragma once
/// \file fg::data::fashion_mnist::load_data: Fashion-MNIST as tf.keras.datasets.fashion_mnist
/// gives it, from the IDX files on this machine (nothing is downloaded): 60000 training and
/// 10000 test images of 28x28 pixels, values 0 to 255, as tensor<int32_t> (fusegrad has no
/// uint8; `fg::cast<float>(x) / 255.f` scales them), and labels 0 to 9 as tensor<int32_t>, the
/// class indices sparse_categorical_crossentropy takes. The files are looked for in
/// default_directory(): $FUSEGRAD_DATASETS/fashion-mnist when FUSEGRAD_DATASETS is set,
/// else /usr/share/datasets/fashion-mnist, where Debian's dataset-fashion-mnist package puts
/// them. Link with -lz.

#include <array>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "mnist.hpp"

namespace fusegrad::data::fashion_mnist {

/// The names of the ten classes, by label.
inline constexpr std::array<std::string_view, 10> class_names = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};

/// Where load_data() reads: $FUSEGRAD_DATASETS/fashion-mnist when the environment variable
/// FUSEGRAD_DATASETS (a directory of data sets, one folder each) is set and not empty, else
/// /usr/share/datasets/fashion-mnist.
inline std::filesystem::path default_directory() {
  const char* root = std::getenv("FUSEGRAD_DATASETS");
  return std::filesystem::path(root && *root ? root : "/usr/share/datasets") / "fashion-mnist";
}

/// Reads train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and
/// t10k-labels-idx1-ubyte (each with ".gz" or without) from `directory`: images of rank 3 and
/// as many labels as images, else an error naming the file (fg::data::mnist::load_data's rules).
inline train_test_split load_data(const std::filesystem::path& directory) {
  return impl::load_mnist_layout(directory, "fg::data::fashion_mnist::load_data",
                                 "; install Debian's dataset-fashion-mnist, set FUSEGRAD_DATASETS to a directory "
                                 "holding fashion-mnist/, or pass the directory of the four files");
}

/// Reads the data set from default_directory(): `auto [train, test] = load_data();`.
inline train_test_split load_data() { return load_data(default_directory()); }

}  // namespace fusegrad::data::fashion_mnist
