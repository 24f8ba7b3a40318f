#pragma once
/// \file The umbrella header: everything fusegrad offers. `namespace fg = fusegrad;` comes with it.

#if defined(FUSEGRAD_DEVICE)
#include "eval/device.hpp"  // the Thrust device backend (docs/device.md), before the ops that use it
#endif
#include "core/parallel.hpp"
#include "core/printing.hpp"
#include "core/random.hpp"
#include "eval/creation.hpp"
#include "ops/binary.hpp"
#include "autodiff/gradient_tape.hpp"
#include "autodiff/variable.hpp"
#include "autodiff/custom_gradient.hpp"
#include "autodiff/functional.hpp"
#include "autodiff/jacobian.hpp"
#include "eager/evaluate.hpp"
#include "eager/reshape.hpp"
#include "eager/stop_gradient.hpp"
#include "eager/reduce.hpp"
#include "eager/shape_ops.hpp"
#include "eager/indexing.hpp"
#include "eager/linalg.hpp"
#include "eager/scan.hpp"
#include "eager/check_gradients.hpp"
#include "eager/debugging.hpp"
