#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang (-fsanitize=fuzzer,address,undefined) and
# runs each for a bounded time from its seed corpus (tests/fuzz/corpus/NAME). Usage:
#   bash tests/fuzz/run.sh [SECONDS_PER_TARGET]   (default 60)
# FUZZ_DIR (default build-fuzz) holds the programs, their logs, the inputs found that reach new
# code (FUZZ_DIR/corpus/NAME; the seed corpus is not changed) and a crashing input, which fails
# the run. Needs clang and its libFuzzer runtime (Debian: clang, libclang-rt-dev); without them
# it says so and exits 77 (a skipped test to meson).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-60}"
out="${FUZZ_DIR:-build-fuzz}"
mkdir -p "$out"
if ! command -v clang++ >/dev/null ||
   ! echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' |
     clang++ -x c++ -fsanitize=fuzzer - -o "$out/probe" >/dev/null 2>&1; then
  echo "fuzz: clang with libFuzzer not found (Debian: clang libclang-rt-dev); skipping"
  exit 77
fi
flags="$(pkg-config --cflags xtensor hdf5)"
libs="$(pkg-config --libs hdf5)"
status=0
names=()
for src in tests/fuzz/*_fuzz.cpp; do names+=("$(basename "$src" _fuzz.cpp)"); done
# The targets are built side by side, then run side by side (each fuzzer uses one core).
build() {
  local src=tests/fuzz/$1_fuzz.cpp exe=$out/$1_fuzz
  rm -f "$out/$1.build.log"
  if [ ! -x "$exe" ] || [ "$src" -nt "$exe" ] || [ -n "$(find include -newer "$exe" -name '*.hpp' -print -quit)" ]; then
    clang++ -std=c++20 -O1 -g -march=native -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
      -Iinclude $flags "$src" -lopenblas -ldnnl -lz $libs -o "$exe" > "$out/$1.build.log" 2>&1
  fi
}
run() {
  mkdir -p "$out/corpus/$1"
  # Huge requests are fusegrad's to refuse (out_of_memory), not the sanitizer's to abort on.
  # HDF5 1.10 keeps a few bytes after each metadata checksum that fails: no leak checks there.
  local leaks=1
  [ "$1" != hdf5 ] || leaks=0
  ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=$leaks UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "$out/$1_fuzz" -max_total_time="$seconds" -max_len=256 -rss_limit_mb=4096 -print_final_stats=1 \
      -detect_leaks=$leaks \
      -artifact_prefix="$out/" "$out/corpus/$1" "tests/fuzz/corpus/$1" > "$out/$1.log" 2>&1
}
pids=()
for name in "${names[@]}"; do build "$name" & pids+=($!); done
for i in "${!names[@]}"; do
  if ! wait "${pids[$i]}"; then
    status=1
    echo "fuzz ${names[$i]}: build FAILED"
    tail -n 40 "$out/${names[$i]}.build.log"
  fi
done
[ "$status" = 0 ] || exit 1
pids=()
for name in "${names[@]}"; do run "$name" & pids+=($!); done
for i in "${!names[@]}"; do
  name=${names[$i]}
  if wait "${pids[$i]}"; then
    echo "fuzz $name: $(grep -E '^stat::number_of_executed_units' "$out/$name.log" | awk '{print $2}') runs in ${seconds} s," \
         "$(grep -oE 'cov: [0-9]+' "$out/$name.log" | tail -n 1 | awk '{print $2}') edges, no defect"
  else
    status=1
    echo "fuzz $name: FAILED"
    tail -n 40 "$out/$name.log"
  fi
done
exit "$status"
