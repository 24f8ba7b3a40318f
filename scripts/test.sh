#!/usr/bin/env bash
# The whole test suite: installs what is missing, configures, builds, runs every test (unit tests,
# compile-failure tests, examples), and ends with `tests: N passed, M failed`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/configure.sh build
ninja -C build
status=0
meson test -C build --no-rebuild --print-errorlogs --num-processes "$(nproc)" > build/meson-test.out 2>&1 || status=$?
tail -n 30 build/meson-test.out
python3 scripts/count_tests.py build/meson-logs/testlog.json || status=1
exit "$status"
