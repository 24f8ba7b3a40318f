#pragma once
/// \file The neural-network umbrella header: <fusegrad/fusegrad.hpp>, tf.nn's ops and the
/// training ops as free functions in `fg::` (eager/nn_ops.hpp), and Keras in `fg::nn` (layers,
/// models found by the walk of nn/model.hpp, initializers, regularizers, losses, metrics) and
/// `fg::optimizers`. conv2d runs on oneDNN: a program built header-only that calls it links
/// -ldnnl (package mode links it through libfusegrad).

#include "fusegrad.hpp"
#include "eager/nn_ops.hpp"
#include "nn/activations.hpp"
#include "nn/batch_normalization.hpp"
#include "nn/callbacks.hpp"
#include "nn/conv2d.hpp"
#include "nn/dense.hpp"
#include "nn/dropout.hpp"
#include "nn/embedding.hpp"
#include "nn/fit.hpp"
#include "nn/initializers.hpp"
#include "nn/layer.hpp"
#include "nn/losses.hpp"
#include "nn/metrics.hpp"
#include "nn/model.hpp"
#include "nn/optimizers/adagrad.hpp"
#include "nn/optimizers/adam.hpp"
#include "nn/optimizers/rmsprop.hpp"
#include "nn/optimizers/schedules.hpp"
#include "nn/optimizers/sgd.hpp"
#include "nn/pooling.hpp"
#include "nn/regularizers.hpp"
#include "nn/reshape.hpp"
#include "nn/sequential.hpp"
