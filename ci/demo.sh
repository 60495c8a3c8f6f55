#!/usr/bin/env bash
# The one demo command: installs dependencies, builds, and runs the main demo — a 4-rank job over
# 2 emulated nodes on the emulated backend, started by the memloom-run launcher.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-deps.sh
# Its own build directory, so the demo and the test command never reconfigure each other's build.
export MEMLOOM_BUILD_DIR="${MEMLOOM_BUILD_DIR:-build-demo}"
MEMLOOM_BUILD_TYPE=Release bash ci/build.sh -DMEMLOOM_BUILD_TESTS=OFF
build_dir="$MEMLOOM_BUILD_DIR"
export MEMLOOM_BACKEND=emulated
exec "$build_dir/bin/memloom-run" -n 4 --nodes 2 --timeout 120 -- "$build_dir/bin/embedding_demo"
