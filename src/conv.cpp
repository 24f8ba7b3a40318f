// libfusegrad's convolutions (eval/conv.hpp): oneDNN for float32, direct loops for float64,
// compiled once here for programs built in package mode. The only unit that sees <dnnl.hpp>.
#include <fusegrad/eval/host_dnnl.hpp>
