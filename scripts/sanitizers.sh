#!/usr/bin/env bash
# The sanitizer runs of the test suite (docs/testing.md):
# - thread: the concurrency test and the [threads] cases of the datasets' and the misuse tests
#   with ThreadSanitizer (build-tsan/);
# - address: the unit tests built again with AddressSanitizer, UndefinedBehaviorSanitizer (with
#   float-cast-overflow, which GCC's -fsanitize=undefined leaves out) and
#   LeakSanitizer (build-asan/, every report fatal; -Og: an optimised build, so the SIMD loops
#   users run are the ones checked (Note [host simd]), which compiles in two thirds of -O1's time
#   under the sanitizers).
# Each leaves a meson-style test log for scripts/count_tests.py.
# Usage: sanitizers.sh [thread] [address]   (both without arguments; test.sh runs `thread`, and
# both with FUSEGRAD_SANITIZERS=1).
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
runs=" ${*:-thread address} "

# ThreadSanitizer: one program, built directly (a whole meson build under TSan would rebuild
# every test for one file's sake), in the background while the AddressSanitizer build runs, so
# that its one compile job does not run alone at the end.
if [[ $runs == *" thread "* ]]; then
  mkdir -p build-tsan
  flags=$(pkg-config --cflags xtensor catch2)
  rm -f build-tsan/testlog.json build-tsan/concurrency_test build-tsan/data_test build-tsan/misuse_test
  # The concurrency test, the datasets' tests of their map and prefetch threads, then the
  # misuse test's tape accessors called from another thread.
  (g++ -std=c++20 -O1 -g -fsanitize=thread -march=native -Iinclude -Itests $flags \
     tests/concurrency_test.cpp tests/catch_main.cpp -lopenblas -ldnnl -lpthread -o build-tsan/concurrency_test &&
   g++ -std=c++20 -O1 -g -fsanitize=thread -march=native -Iinclude -Itests $flags $(pkg-config --cflags hdf5) \
     tests/data_test.cpp tests/catch_main.cpp -lopenblas -ldnnl -lpthread -lz -o build-tsan/data_test &&
   g++ -std=c++20 -O1 -g -fsanitize=thread -march=native -Iinclude -Itests $flags $(pkg-config --cflags hdf5) \
     tests/misuse_test.cpp tests/catch_main.cpp -lopenblas -ldnnl -lpthread -lz $(pkg-config --libs hdf5) \
     -o build-tsan/misuse_test) \
    > build-tsan/build.out 2>&1 &
  tsan_build=$!
fi

if [[ $runs == *" address "* ]]; then
  bash scripts/configure.sh build-asan -Db_sanitize=address,undefined -Doptimization=g -Ddebug=false \
    "-Dcpp_args=['-fno-omit-frame-pointer','-fsanitize=float-cast-overflow','-fno-sanitize-recover=all']" \
    -Dbenchmarks=disabled -Dexamples=false -Dheader_programs=false -Ddevice=disabled -Dcuda=disabled
  rm -f build-asan/meson-logs/testlog.json
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    meson test -C build-asan --suite unit --print-errorlogs --num-processes "$(nproc)" \
    > build-asan/meson-test.out 2>&1 || status=$?
  tail -n 5 build-asan/meson-test.out
fi

if [[ $runs == *" thread "* ]]; then
  wait "$tsan_build"; tsan_rc=$?
  if [ "$tsan_rc" -eq 0 ]; then
    out=$(TSAN_OPTIONS=halt_on_error=1 ./build-tsan/concurrency_test 2>&1 &&
          TSAN_OPTIONS=halt_on_error=1 ./build-tsan/data_test '[threads]' 2>&1 &&
          TSAN_OPTIONS=halt_on_error=1 ./build-tsan/misuse_test '[threads]' 2>&1); rc=$?
  else
    out=$(cat build-tsan/build.out); rc=1
  fi
  result=OK
  [ "$rc" -eq 0 ] || { result=FAIL; status=1; echo "$out" | tail -n 40; }
  python3 -c 'import json, sys; print(json.dumps({"name": "concurrency_test, data_test and misuse_test [threads] (ThreadSanitizer)", "result": sys.argv[1], "stdout": sys.argv[2]}))' \
    "$result" "$out" > build-tsan/testlog.json
fi
exit "$status"
