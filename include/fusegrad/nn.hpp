#pragma once
/// \file The neural-network umbrella header, tf.nn's ops as free functions in `fg::`:
/// activations, softmax and the cross-entropies, normalization (moments, batch norm,
/// l2_normalize), dropout, bias_add, conv2d and the pools. Includes <fusegrad/fusegrad.hpp>.
/// conv2d runs on oneDNN: a program built header-only that calls it links -ldnnl (package mode
/// links it through libfusegrad).

#include "fusegrad.hpp"
#include "eager/activations.hpp"
#include "eager/bias_add.hpp"
#include "eager/softmax.hpp"
#include "eager/cross_entropy.hpp"
#include "eager/normalization.hpp"
#include "eager/dropout.hpp"
#include "eager/conv.hpp"
#include "eager/pooling.hpp"
