#!/usr/bin/env bash
# The compile-time table of docs/benchmarks.md ("Compile time"): user CPU seconds and peak memory
# of each probe unit, compiled with the command a user would type,
#   g++ -std=c++20 -O2 -march=native -Iinclude $(pkg-config --cflags xtensor) -c FILE.cpp
# header-only, and in package mode: with -DFUSEGRAD_SEPARATE_ENGINES, the flag
# `pkg-config --cflags fusegrad` adds (plus, once, libfusegrad's sources, src/*.cpp). With REV (a
# commit), the same units are compiled first against that commit's headers (a temporary
# worktree), in both modes, so the columns come from the same hour.
# Usage: benchmarks/compile_time/measure.sh [ROUNDS [REV]]   (from anywhere in the repository)
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds="${1:-2}"
rev="${2:-}"
units=(benchmarks/compile_time/header_only.cpp benchmarks/compile_time/chain_no_tape.cpp
       benchmarks/compile_time/chain_tape.cpp benchmarks/compile_time/five_chains.cpp
       benchmarks/compile_time/mlp_step.cpp benchmarks/compile_time/cnn_step.cpp examples/custom_gradient.cpp
       examples/mnist_model.cpp)
flags=(-std=c++20 -O2 -march=native $(pkg-config --cflags xtensor))
out=$(mktemp -d)
trap 'rm -rf "$out"; [ -z "$rev" ] || git worktree remove --force "$out/rev" 2>/dev/null || true' EXIT
if [ -n "$rev" ]; then git worktree add --detach "$out/rev" "$rev" >/dev/null 2>&1; fi

one() {  # one() LABEL INCLUDE_DIR FILE [EXTRA FLAGS...]: prints "LABEL FILE SECONDS KB"
  local label="$1" inc="$2" file="$3"; shift 3
  local t
  t=$( { /usr/bin/time -f "%U %M" g++ "${flags[@]}" -I"$inc" "$@" -c "$file" -o "$out/unit.o" 2>&1 >/dev/null; } | tail -n 1)
  echo "$label $(basename "$file") $t"
}
for r in $(seq "$rounds"); do
  echo "# round $r"
  for f in "${units[@]}"; do
    if [ -n "$rev" ] && [ -e "$out/rev/$f" ]; then
      one "$rev" "$out/rev/include" "$f"
      one "$rev-package" "$out/rev/include" "$f" -DFUSEGRAD_SEPARATE_ENGINES
    fi
    one header-only include "$f"
    one package include "$f" -DFUSEGRAD_SEPARATE_ENGINES
  done
  for f in src/*.cpp; do one package include "$f" -DFUSEGRAD_SEPARATE_ENGINES; done
done
