#!/usr/bin/env bash
# clang reads fusegrad's headers as GCC does: the umbrella headers and three examples that
# instantiate fit with its callbacks, checkpoints, the datasets and the HDF5 files, checked with
# clang++ -fsyntax-only (Debian 12's clang 14, the oldest clang the project builds with). Skipped,
# exit 77, without clang.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v clang++ >/dev/null; then
  echo "clang: clang++ not found; skipping"
  exit 77
fi
flags=(-std=c++20 -fsyntax-only -Iinclude $(pkg-config --cflags xtensor hdf5))
status=0
for f in tests/clang/umbrella.cpp examples/mnist_cnn.cpp examples/mnist_mlp.cpp examples/checkpoint_resume.cpp; do
  if clang++ "${flags[@]}" "$f"; then echo "clang: $f compiles"; else echo "clang: $f FAILED"; status=1; fi
done
exit "$status"
