#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang (-fsanitize=fuzzer,address,undefined) and
# runs each for a bounded time from its seed corpus (tests/fuzz/corpus/NAME). Usage:
#   bash tests/fuzz/run.sh [SECONDS_PER_TARGET]   (default 60)
# Needs clang and its libFuzzer runtime (Debian: clang, libclang-rt-dev or libclang-rt-14-dev).
# New inputs that reach new code go to build-fuzz/corpus/NAME (the seed corpus is not changed);
# a crash leaves its input in build-fuzz/ and fails the run.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-60}"
mkdir -p build-fuzz
flags=$(pkg-config --cflags xtensor)
status=0
for src in tests/fuzz/*_fuzz.cpp; do
  name=$(basename "$src" _fuzz.cpp)
  exe=build-fuzz/${name}_fuzz
  clang++ -std=c++20 -O1 -g -march=native -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    -Iinclude $flags "$src" -lopenblas -o "$exe"
  mkdir -p "build-fuzz/corpus/$name"
  # Huge requests are fusegrad's to refuse (out_of_memory), not the sanitizer's to abort on.
  ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "$exe" -max_total_time="$seconds" -max_len=256 -rss_limit_mb=4096 -print_final_stats=1 \
      -artifact_prefix=build-fuzz/ "build-fuzz/corpus/$name" "tests/fuzz/corpus/$name" \
      > "build-fuzz/$name.log" 2>&1 || { status=1; tail -n 40 "build-fuzz/$name.log"; }
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|cov:" "build-fuzz/$name.log" | tail -n 3 || true
done
exit "$status"
