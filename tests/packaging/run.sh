#!/usr/bin/env bash
# Packaging as a user meets it: installs fusegrad with `meson install` staged under DESTDIR for
# a prefix it is never copied to, then builds and runs a small program against the staged tree
# where it lies, once with CMake's find_package(fusegrad) and once with pkg-config. Both work
# only if the installed package files find the headers relative to themselves. Also checks
# that the CUDA extras (the cuda/ headers and kernels.py) are installed.
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
  -Dcuda=disabled -Ddevice=disabled > "$work/setup.log" || { cat "$work/setup.log"; exit 1; }
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

# CMake: find_package(fusegrad) from the staged tree.
cmake -S "$src/tests/packaging/consumer" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$root" \
  -DCMAKE_BUILD_TYPE=Release > "$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; fail "CMake could not configure the consumer"; }
cmake --build "$work/cmake" > "$work/cmake-build.log" 2>&1 || { tail -n 30 "$work/cmake-build.log"; fail "the CMake consumer did not build"; }
"$work/cmake/consumer"

# pkg-config: the flags of the staged fusegrad.pc.
flags=$(PKG_CONFIG_PATH="$(dirname "$pc")" pkg-config --cflags --libs fusegrad) || fail "pkg-config does not know fusegrad"
include=$(PKG_CONFIG_PATH="$(dirname "$pc")" pkg-config --cflags-only-I fusegrad | tr ' ' '\n' | grep -m1 '^-I' | cut -c3-)
[ "$(readlink -f "$include")" = "$(readlink -f "$root/include")" ] ||
  fail "pkg-config's include directory is not the staged tree's: $include"
# shellcheck disable=SC2086
g++ -O1 "$src/tests/packaging/consumer/main.cpp" $flags -o "$work/pkg-consumer" || fail "the pkg-config consumer did not build"
"$work/pkg-consumer"
echo "packaging: CMake and pkg-config consumers built and ran against a staged install"
