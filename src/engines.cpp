// libfusegrad's engines (Note [separate engines], eager/engines.hpp): the backward engines,
// gradient_tape's walk, constructor and destructor, and the float32/float64 op tables,
// reductions and products a tape uses most (Note [shared op tables]), compiled once here for
// every program built in package mode (FUSEGRAD_SEPARATE_ENGINES, which the build packages pass).
#include <fusegrad/eager/engines.hpp>
