// The device backend on Thrust's OpenMP system: "/gpu:0" is host memory allocated through the
// device runtime, so the device evaluator, its reductions, matmul, copies, placement and errors
// run on every machine. cuda/device_test.cu runs the same bodies on a real GPU.
#include "device_test_bodies.hpp"
