#pragma once
/// \file The datasets umbrella header: <fusegrad/fusegrad.hpp>, tf.data's Dataset as
/// `fg::data::dataset` with its sources and transformations (data/dataset.hpp), and the loaders
/// of real data: IDX files and Fashion-MNIST (data/fashion_mnist.hpp; link with -lz).

#include "fusegrad.hpp"
#include "data/dataset.hpp"
#include "data/fashion_mnist.hpp"
