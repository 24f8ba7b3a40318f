#!/usr/bin/env bash
# The main job: installs what is missing, builds, runs every example, then a short run of the
# fused-kernel benchmarks with their summary (full figures: docs/benchmarks.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/configure.sh build
# Only what this job runs: the examples and the fused-chain benchmark (the tests are scripts/test.sh's).
examples=$(python3 scripts/list_examples.py build)
targets=""
for ex in $examples; do targets="$targets examples/$ex"; done
all_targets=$(ninja -C build -t targets all)
if grep -q '^benchmarks/fused_chain:' <<< "$all_targets"; then targets="$targets benchmarks/fused_chain"; fi
ninja -C build $targets
for ex in $examples; do
  echo "== examples/$ex"
  "build/examples/$ex"
done
if [ -x build/benchmarks/fused_chain ]; then
  echo "== benchmarks (short run; see docs/benchmarks.md for the full command)"
  build/benchmarks/fused_chain --benchmark_min_time=0.05 --benchmark_filter='/1000000$'
fi
