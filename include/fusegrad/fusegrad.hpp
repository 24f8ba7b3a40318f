#pragma once
/// \file The umbrella header: everything fusegrad offers. `namespace fg = fusegrad;` comes with it.

#if defined(FUSEGRAD_DEVICE)
#include "eval/device.hpp"  // the Thrust device backend (docs/device.md), before the ops that use it
#endif
#include "core/creation.hpp"
#include "core/printing.hpp"
#include "ops/binary.hpp"
#include "ops/reduce.hpp"
#include "autodiff/gradient_tape.hpp"
#include "autodiff/variable.hpp"
#include "autodiff/stop_gradient.hpp"
#include "autodiff/custom_gradient.hpp"
#include "autodiff/functional.hpp"
#include "autodiff/jacobian.hpp"
#include "autodiff/check_gradients.hpp"
#include "core/random.hpp"
#include "ops/shape_ops.hpp"
#include "ops/indexing.hpp"
#include "ops/linalg.hpp"
#include "ops/scan.hpp"
