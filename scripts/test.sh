#!/usr/bin/env bash
# The whole test suite: installs what is missing, configures, builds, runs every test (unit tests,
# compile-failure tests, examples, header programs, a short run of each fuzz target), then the unit
# tests again under the sanitizers (scripts/sanitizers.sh; FUSEGRAD_SANITIZERS=0 leaves them out),
# and ends with `tests: N passed, M failed`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/configure.sh build
status=0
rm -f build/meson-logs/testlog.json
# meson test builds what the tests need (not the benchmarks), then runs them.
meson test -C build --print-errorlogs --num-processes "$(nproc)" > build/meson-test.out 2>&1 || status=$?
tail -n 30 build/meson-test.out
echo "test.sh: main suite done after $SECONDS s"
logs=(build/meson-logs/testlog.json)
# The sanitizer runs (docs/testing.md), unless FUSEGRAD_SANITIZERS=0.
if [ "${FUSEGRAD_SANITIZERS:-1}" != 0 ]; then
  bash scripts/sanitizers.sh || status=1
  echo "test.sh: sanitizer runs done after $SECONDS s"
  logs+=(build-asan/meson-logs/testlog.json build-tsan/testlog.json)
fi
python3 scripts/count_tests.py "${logs[@]}" || status=1
exit "$status"
