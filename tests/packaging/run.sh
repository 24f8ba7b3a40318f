#!/usr/bin/env bash
# Packaging as a user meets it: installs fusegrad with `meson install` staged under DESTDIR for
# a prefix it is never copied to, then builds and runs a small program against the staged tree
# where it lies, with CMake's find_package(fusegrad) and with pkg-config, each in package mode
# (linking the staged libfusegrad) and header-only. They work only if the installed package
# files find the headers and the library relative to themselves. Also checks libfusegrad's
# soname, the link error of a package-mode program that forgets the library, and that the
# CUDA extras (the cuda/ headers and kernels.py) are installed.
# Usage: run.sh (meson runs it as the test `packaging`; needs cmake and pkg-config).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
for tool in cmake pkg-config; do
  command -v "$tool" >/dev/null || { echo "packaging: $tool not found; skipping"; exit 77; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=/opt/fusegrad-packaging-test
meson setup "$work/build" "$src" --prefix="$prefix" -Dtests=false -Dexamples=false -Dbenchmarks=disabled \
  -Dcuda=disabled -Ddevice=disabled -Dnative=false > "$work/setup.log" || { cat "$work/setup.log"; exit 1; }
meson install -C "$work/build" --destdir "$work/stage" --quiet
root=$work/stage$prefix
fail() { echo "packaging: $*"; exit 1; }

[ -f "$root/include/fusegrad/fusegrad.hpp" ] || fail "headers not installed"
[ -f "$root/include/fusegrad/cuda/runtime.hpp" ] || fail "cuda headers not installed (include/fusegrad/cuda)"
[ -x "$root/share/fusegrad/kernels.py" ] || fail "share/fusegrad/kernels.py not installed as a program"
config=$(find "$root" -name fusegradConfig.cmake)
pc=$(find "$root" -name fusegrad.pc)
[ -n "$config" ] && [ -n "$pc" ] || fail "fusegradConfig.cmake or fusegrad.pc not installed"
if grep -q "$prefix" "$config" "$pc"; then fail "an installed package file names the prefix $prefix: not relocatable"; fi

lib=$(find "$root" -name 'libfusegrad.so.*.*.*' | head -n 1)
[ -n "$lib" ] || fail "libfusegrad.so.VERSION not installed"
headers=$(objdump -p "$lib")  # not piped into grep -q, whose early exit would fail the pipe
grep -q 'SONAME *libfusegrad\.so\.0$' <<< "$headers" || fail "libfusegrad has no soname libfusegrad.so.0"
[ -e "$(dirname "$lib")/libfusegrad.so" ] || fail "libfusegrad.so (the link for -lfusegrad) not installed"

# mode_of PROGRAM EXPECTED: runs it, checks the mode it names and whether it loads libfusegrad.
mode_of() {
  local out
  out=$("$1") || { echo "$out"; fail "$1 failed"; }
  echo "$out"
  grep -qx "mode: $2" <<< "$out" || fail "$1 was not built in $2 mode"
  local libs
  libs=$(ldd "$1")
  if [ "$2" = package ]; then
    grep -q "libfusegrad.so.0 => $(dirname "$lib")" <<< "$libs" || fail "$1 does not load the staged libfusegrad"
  else
    ! grep -q libfusegrad <<< "$libs" || fail "$1 (header-only) loads libfusegrad"
  fi
}

# CMake: find_package(fusegrad) from the staged tree; fusegrad::fusegrad and fusegrad::header_only.
cmake -S "$src/tests/packaging/consumer" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$root" \
  -DCMAKE_BUILD_TYPE=Release > "$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; fail "CMake could not configure the consumer"; }
cmake --build "$work/cmake" > "$work/cmake-build.log" 2>&1 || { tail -n 30 "$work/cmake-build.log"; fail "the CMake consumer did not build"; }
mode_of "$work/cmake/consumer" package
mode_of "$work/cmake/consumer_header_only" header-only

# pkg-config: the flags of the staged fusegrad.pc and fusegrad-header-only.pc.
export PKG_CONFIG_PATH
PKG_CONFIG_PATH="$(dirname "$pc")"
flags=$(pkg-config --cflags --libs fusegrad) || fail "pkg-config does not know fusegrad"
grep -q -- '-DFUSEGRAD_SEPARATE_ENGINES' <<< "$flags" || fail "pkg-config fusegrad does not pass FUSEGRAD_SEPARATE_ENGINES"
grep -q -- '-lfusegrad' <<< "$flags" || fail "pkg-config fusegrad does not link libfusegrad"
include=$(pkg-config --cflags-only-I fusegrad | tr ' ' '\n' | grep -m1 '^-I' | cut -c3-)
[ "$(readlink -f "$include")" = "$(readlink -f "$root/include")" ] ||
  fail "pkg-config's include directory is not the staged tree's: $include"
# shellcheck disable=SC2086
g++ -O1 "$src/tests/packaging/consumer/main.cpp" $flags -Wl,-rpath,"$(dirname "$lib")" -o "$work/pkg-consumer" ||
  fail "the pkg-config consumer did not build"
mode_of "$work/pkg-consumer" package
header_flags=$(pkg-config --cflags --libs fusegrad-header-only) || fail "pkg-config does not know fusegrad-header-only"
# shellcheck disable=SC2086
g++ -O1 "$src/tests/packaging/consumer/main.cpp" $header_flags -o "$work/pkg-consumer-header-only" ||
  fail "the header-only pkg-config consumer did not build"
mode_of "$work/pkg-consumer-header-only" header-only

# Package mode without the library: the link fails and names the macro and the library.
# shellcheck disable=SC2086
if g++ -O1 "$src/tests/packaging/consumer/main.cpp" $(pkg-config --cflags fusegrad) $(pkg-config --libs fusegrad-header-only) \
     -o "$work/no-lib" > "$work/no-lib.log" 2>&1; then
  fail "a package-mode program linked without libfusegrad"
fi
grep -q 'fusegrad_package_mode_FUSEGRAD_SEPARATE_ENGINES_needs_libfusegrad' "$work/no-lib.log" ||
  { cat "$work/no-lib.log"; fail "the link error of a package-mode program without libfusegrad does not name the macro"; }
echo "packaging: CMake and pkg-config consumers built and ran against a staged install, in package mode and header-only"
