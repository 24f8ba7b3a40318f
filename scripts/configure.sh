#!/usr/bin/env bash
# Configures the meson build directory once (later runs are incremental). Usage: configure.sh BUILD_DIR [meson options]
set -euo pipefail
build="$1"; shift
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" "$@"
fi
