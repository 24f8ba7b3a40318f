#!/usr/bin/env bash
# The whole test suite: installs what is missing, configures, builds, runs every test (unit tests,
# compile-failure tests, examples, header programs, a short run of each fuzz target), then the
# concurrency test under ThreadSanitizer, and ends with `tests: N passed, M failed`.
# FUSEGRAD_SANITIZERS=1 also runs every unit test under AddressSanitizer, UndefinedBehaviorSanitizer
# and LeakSanitizer (about 35 more minutes on 2 cores; run before a change is called done);
# FUSEGRAD_SANITIZERS=0 runs no sanitizer (scripts/sanitizers.sh, docs/testing.md).
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
# The sanitizer runs (docs/testing.md).
case "${FUSEGRAD_SANITIZERS:-thread}" in
  0) ;;
  1)
    bash scripts/sanitizers.sh thread address || status=1
    logs+=(build-tsan/testlog.json build-asan/meson-logs/testlog.json) ;;
  *)
    bash scripts/sanitizers.sh thread || status=1
    logs+=(build-tsan/testlog.json) ;;
esac
echo "test.sh: sanitizer runs done after $SECONDS s"
python3 scripts/count_tests.py "${logs[@]}" || status=1
exit "$status"
