#pragma once
/// \file The definition of autodiff::install_entry_engines (Note [installed engines],
/// autodiff/program_entry.hpp): the table of the backward engines, the eager services and the
/// op-by-op runner.
///
/// Note [separate engines]: a translation unit that constructs a gradient_tape compiles the
/// engines behind that table and gradient_tape's constructor, destructor and backward walk
/// (autodiff/tape_walk.hpp), whatever else it does: about 3 s of CPU time at -O2 with GCC 12
/// over the header's 2 s (docs/benchmarks.md, "Compile time"). By default every such unit
/// compiles them, so the library stays header-only. A program of several units can compile them
/// once instead: define FUSEGRAD_SEPARATE_ENGINES in every unit of the program (a compiler flag,
/// so that no unit differs), and include this header in exactly one of its source files. Then
/// the other headers declare install_entry_engines() and those members of gradient_tape
/// (gradient_tape::backward and its passes, the constructor and the destructor) and never
/// define them; that source file defines them (their linkage is FG_ENGINES_INLINE,
/// core/config.hpp). That file also compiles the op tables, reductions and products of Note
/// [shared op tables] (eager/program_of.hpp), which the other units then only declare. A
/// program built so that forgets the source file fails to link (an undefined
/// fusegrad::autodiff::install_entry_engines()); one that includes this header in two files
/// fails to link with a multiple definition.

#include "evaluate.hpp"
#if defined(FUSEGRAD_SEPARATE_ENGINES)
#include "../autodiff/tape_walk.hpp"  // gradient_tape's walk, constructor and destructor, compiled here too
#endif

namespace fusegrad::autodiff {
/// Note [installed engines] (autodiff/program_entry.hpp): called by every gradient_tape made.
FG_ENGINES_INLINE void install_entry_engines() {
  static constexpr entry_engines e{&run_fused_entry,           &point_backward,     &replay_scalar_entry,
                                   &replay_installed,          &run_installed_op_by_op, &eager::services,
                                   &eager::report_nonfinite,   &eager::report_evaluation,
                                   &eager::record_evaluation, &eager::record_scalar};
  installed_engines.store(&e, std::memory_order_release);
}
}  // namespace fusegrad::autodiff

#if defined(FUSEGRAD_SEPARATE_ENGINES)
#include "linalg.hpp"
#include "reduce.hpp"

// Note [package mode] (core/config.hpp): what every unit built in package mode refers to.
extern "C" const int fusegrad_package_mode_FUSEGRAD_SEPARATE_ENGINES_needs_libfusegrad = 1;

namespace fusegrad::eager {
// Note [shared op tables] (eager/program_of.hpp): the tables every other unit declares.
FG_SHARED_OP_TABLES(, float)
FG_SHARED_OP_TABLES(, double)
}  // namespace fusegrad::eager
namespace fusegrad {
// And the reductions and products every other unit declares (eager/reduce.hpp, eager/linalg.hpp).
FG_SHARED_REDUCTIONS(, float)
FG_SHARED_REDUCTIONS(, double)
FG_SHARED_MATMUL(, float)
FG_SHARED_MATMUL(, double)
}  // namespace fusegrad
#endif
