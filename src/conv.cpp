// libfusegrad's convolutions (eval/conv.hpp): oneDNN for float32, direct loops for float64,
// compiled once here for programs built in package mode, with the runs of conv2d and its two
// backprops (FG_SHARED_CONV, eager/conv.hpp). With src/gemm.cpp, the only units that see
// oneDNN's headers.
#include <fusegrad/eager/conv.hpp>
#include <fusegrad/eval/host_dnnl.hpp>

namespace fusegrad {
FG_SHARED_CONV(, float)
FG_SHARED_CONV(, double)
}  // namespace fusegrad
