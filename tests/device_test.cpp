// The device backend on Thrust's OpenMP system: "/gpu:0" is host memory allocated through the
// device runtime, so the device evaluator, its reductions, matmul, copies, placement and errors
// run on every machine. cuda/device_test_part*.cu run the same bodies on a real GPU.
#include "device_test_bodies.hpp"
