#!/usr/bin/env bash
# mpirun -np N PROGRAM..., with what Open MPI needs to run as root in a container (CI runs as
# root) and more ranks than cores; no launcher variable of memloom-run leaks in from the test's environment.
#   mpirun.sh MPIRUN N PROGRAM [ARGS...]
set -euo pipefail
mpirun="$1" ranks="$2"
shift 2
for name in MEMLOOM_RANK MEMLOOM_WORLD_SIZE MEMLOOM_LOCAL_RANK MEMLOOM_LOCAL_SIZE MEMLOOM_STORE_URL \
  MEMLOOM_JOB_ID MEMLOOM_JOB_SECRET MEMLOOM_NODE MEMLOOM_DEVICE MEMLOOM_RUNTIME_DIR; do unset "$name"; done
extra=(--oversubscribe)
[[ "$(id -u)" == 0 ]] && extra+=(--allow-run-as-root)
# LAUNCHER_TEST_DEVICE: one device for every rank (a machine with fewer GPUs than ranks).
if [[ -n "${LAUNCHER_TEST_DEVICE:-}" ]]; then
  export MEMLOOM_DEVICE="$LAUNCHER_TEST_DEVICE"
  extra+=(-x MEMLOOM_DEVICE)
fi
exec "$mpirun" "${extra[@]}" -np "$ranks" "$@"
