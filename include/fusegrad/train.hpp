#pragma once
/// \file The training umbrella header: <fusegrad/nn.hpp> and fg::train's checkpoints
/// (checkpoint, checkpoint_manager, latest_checkpoint, save_weights / load_weights, the fit
/// callback model_checkpoint) over HDF5
/// files (io/hdf5.hpp; link -lhdf5 of the serial build, `pkg-config hdf5`), and TensorBoard
/// logs: fg::summary's writers (train/summary.hpp, over io/events.hpp) and the fit callback
/// fg::nn::callbacks::tensorboard.

#include "nn.hpp"
#include "train/checkpoint.hpp"
#include "train/checkpoint_manager.hpp"
#include "train/checkpoint_state.hpp"
#include "train/model_checkpoint.hpp"
#include "train/summary.hpp"
#include "train/tensorboard.hpp"
#include "train/trackable.hpp"
#include "train/weights.hpp"
