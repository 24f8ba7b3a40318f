// The unit that compiles the backward engines, the common op tables, reductions and products
// (Note [separate engines], Note [shared op tables]) for the programs of tests/ built with
// FUSEGRAD_SEPARATE_ENGINES: separate_engines_test and the unit tests (tests/meson.build).
#include <fusegrad/eager/engines.hpp>
