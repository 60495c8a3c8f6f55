#!/usr/bin/env bash
# Configures and builds memloom into ${MEMLOOM_BUILD_DIR:-build}. Extra CMake arguments pass through.
# MEMLOOM_TARGETS (space-separated) builds only those targets instead of everything.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${MEMLOOM_BUILD_DIR:-build}"
jobs="${MEMLOOM_JOBS:-2}"
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # Paths relative to the checkout, so every clone of the repo shares one compiler cache.
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR=1
fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${MEMLOOM_BUILD_TYPE:-RelWithDebInfo}" \
  "${launcher[@]}" "$@"
targets=()
for target in ${MEMLOOM_TARGETS:-}; do targets+=(--target "$target"); done
cmake --build "$build_dir" -j "$jobs" "${targets[@]}"
