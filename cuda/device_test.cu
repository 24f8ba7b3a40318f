// The device backend on a real GPU: the same test bodies as tests/device_test.cpp (Thrust's
// OpenMP system), compiled by nvcc for Thrust's CUDA system, so elementwise chains, reductions
// and copies run as CUDA kernels and matmul through cuBLAS. Without a GPU the program reports
// itself skipped (cuda/test_main.cpp).
#include "../tests/device_test_bodies.hpp"
