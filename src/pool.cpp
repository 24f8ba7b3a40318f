// libfusegrad's pools (eval/pool.hpp): max and average pooling, their gradients and max
// pooling's gradient of the gradient, float32 and float64, compiled once here for programs
// built in package mode.
#include <fusegrad/eval/host_pool.hpp>
