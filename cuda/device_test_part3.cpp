// The device backend on a real GPU: part 3 of the test bodies of tests/device_test.cpp (Thrust's
// OpenMP system; Note [device test parts]). This host code is compiled by the host compiler with
// FUSEGRAD_SEPARATE_KERNELS; its kernels come from the .cu file cuda/kernels.py writes for it,
// compiled by nvcc for Thrust's CUDA system, so elementwise chains, reductions and copies run as
// CUDA kernels and matmul through cuBLAS. The three parts link into one program, which reports
// itself skipped without a GPU (cuda/test_main.cpp).
#define FG_DEVICE_TEST_PART 3
#include "../tests/device_test_bodies.hpp"
