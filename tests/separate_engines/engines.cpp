// The one unit of tests/separate_engines that compiles the engines (Note [separate engines]).
#include <fusegrad/eager/engines.hpp>
