// libfusegrad's float32 matrix product (eval/host_linalg.hpp): oneDNN's sgemm, compiled once here
// for programs built in package mode (Note [float32 products]). With src/conv.cpp, the only units
// that see oneDNN's headers.
#include <fusegrad/eval/host_sgemm.hpp>
