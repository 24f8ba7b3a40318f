// libfusegrad's pools (eval/pool.hpp): max and average pooling, their gradients and max
// pooling's gradient of the gradient, float32 and float64, compiled once here for programs
// built in package mode, with their runs (FG_SHARED_POOL, eager/pooling.hpp).
#include <fusegrad/eager/pooling.hpp>
#include <fusegrad/eval/host_pool.hpp>

namespace fusegrad {
FG_SHARED_POOL(, float)
FG_SHARED_POOL(, double)
}  // namespace fusegrad
