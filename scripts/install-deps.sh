#!/usr/bin/env bash
# Installs the Debian packages fusegrad builds with, when missing. Needs root (or sudo) on Debian/Ubuntu.
set -euo pipefail
packages=(g++ pkg-config python3 meson ninja-build libboost-dev libxtensor-dev libxsimd-dev
          libxtensor-blas-dev libopenblas-dev libdnnl-dev catch2 libbenchmark-dev
          zlib1g-dev libhdf5-dev python3-h5py dataset-fashion-mnist gnuplot-nox
          clang libclang-rt-dev cmake ocl-icd-opencl-dev)
# clang: the fuzz targets (tests/fuzz); cmake: tests/packaging. ocl-icd-opencl-dev: Debian's
# oneDNN is built with its OpenCL GPU runtime, so its CMake package (which fusegrad's finds)
# looks for OpenCL; libdnnl-dev only recommends it, and recommendations are not installed here.
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi
echo "fusegrad: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
