#pragma once
/// \file tf.nn's ops as free functions in `fg::`: activations, softmax and the cross-entropies,
/// normalization (moments, batch norm, l2_normalize), dropout, bias_add, conv2d and the pools.
/// <fusegrad/nn.hpp> includes them with the Keras layers; a unit that needs only the ops includes
/// this header after <fusegrad/fusegrad.hpp>. conv2d runs on oneDNN: a program built header-only
/// that calls it links -ldnnl (package mode links it through libfusegrad).

#include "activations.hpp"
#include "bias_add.hpp"
#include "conv.hpp"
#include "cross_entropy.hpp"
#include "dropout.hpp"
#include "normalization.hpp"
#include "pooling.hpp"
#include "softmax.hpp"
#include "training.hpp"
