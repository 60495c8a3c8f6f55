#!/usr/bin/env bash
# The one demo command: installs the build dependencies, builds only what the demo needs (the
# library, the emulated backend, memloom-run and embedding_demo: no CUDA module, no tests, no
# benchmarks or MPI references), and runs the main demo, a 4-rank job over 2 emulated nodes on the
# emulated backend started by memloom-run. It ends with the demo's one summary line.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
MEMLOOM_DEPS=demo bash ci/install-deps.sh
# Its own build directory, so the demo and the test command never reconfigure each other's build.
export MEMLOOM_BUILD_DIR="${MEMLOOM_BUILD_DIR:-build-demo}"
build_dir="$MEMLOOM_BUILD_DIR"
mkdir -p "$build_dir"
log="$build_dir/demo-build.log"
echo "demo: building the library, memloom-run and embedding_demo into $build_dir (log: $log)"
if ! MEMLOOM_BUILD_TYPE=Release \
  MEMLOOM_TARGETS="memloom memloom_emulated memloom-run embedding_demo" \
  bash ci/build.sh -DMEMLOOM_BUILD_TESTS=OFF -DMEMLOOM_BUILD_BENCH=OFF -DMEMLOOM_WITH_CUDA=OFF \
  -DMEMLOOM_BUILD_EXAMPLES=ON >"$log" 2>&1; then
  tail -n 30 "$log" >&2
  echo "demo: the build failed (whole log: $log)" >&2
  exit 1
fi
echo "demo: built in $(($(date +%s) - start)) s; running 4 ranks on 2 emulated nodes"
export MEMLOOM_BACKEND=emulated
exec "$build_dir/bin/memloom-run" -n 4 --nodes 2 --timeout 120 -- "$build_dir/bin/embedding_demo"
