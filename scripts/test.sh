#!/usr/bin/env bash
# The whole test suite: installs what is missing, configures, builds, runs every test (unit tests,
# compile-failure tests, examples), and ends with `tests: N passed, M failed`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/configure.sh build
status=0
rm -f build/meson-logs/testlog.json
# meson test builds what the tests need (not the benchmarks), then runs them.
meson test -C build --print-errorlogs --num-processes "$(nproc)" > build/meson-test.out 2>&1 || status=$?
tail -n 30 build/meson-test.out
python3 scripts/count_tests.py build/meson-logs/testlog.json || status=1
exit "$status"
