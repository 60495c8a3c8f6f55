#!/usr/bin/env bash
# Starts N copies of a program the way torchrun does: RANK, WORLD_SIZE, LOCAL_RANK,
# LOCAL_WORLD_SIZE, MASTER_ADDR (a host name, as users write it), MASTER_PORT and
# TORCHELASTIC_RUN_ID set, none of memloom-run's variables. Fails when any copy fails or the job outlives
# its time limit; kills the rest then.
#   torchrun_style.sh N SECONDS PROGRAM [ARGS...]
set -uo pipefail
ranks="$1" limit="$2"
shift 2
# MASTER_PORT and MASTER_PORT + 1 (memloom's store) must both be free.
port=$(python3 -c '
import socket
for _ in range(50):
    a = socket.socket(); a.bind(("127.0.0.1", 0)); p = a.getsockname()[1]
    b = socket.socket()
    try:
        b.bind(("127.0.0.1", p + 1)); print(p); break
    except OSError:
        pass
    finally:
        a.close(); b.close()
')
for name in MEMLOOM_RANK MEMLOOM_WORLD_SIZE MEMLOOM_LOCAL_RANK MEMLOOM_LOCAL_SIZE MEMLOOM_STORE_URL \
  MEMLOOM_JOB_ID MEMLOOM_JOB_SECRET MEMLOOM_NODE MEMLOOM_DEVICE MEMLOOM_RUNTIME_DIR; do unset "$name"; done
export MASTER_ADDR=localhost MASTER_PORT="$port" WORLD_SIZE="$ranks" LOCAL_WORLD_SIZE="$ranks"
export TORCHELASTIC_RUN_ID="torchrun-style-$$"
# LAUNCHER_TEST_DEVICE: one device for every rank (a machine with fewer GPUs than ranks).
if [[ -n "${LAUNCHER_TEST_DEVICE:-}" ]]; then export MEMLOOM_DEVICE="$LAUNCHER_TEST_DEVICE"; fi
pids=()
for ((rank = 0; rank < ranks; ++rank)); do
  RANK=$rank LOCAL_RANK=$rank timeout -k 5 "$limit" "$@" &
  pids+=($!)
done
# The first copy to fail, whichever it is, ends the job (a copy that waits for a dead one would
# otherwise sit out its whole deadline).
status=0
while ((${#pids[@]} > 0)); do
  running=()
  for pid in "${pids[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      running+=("$pid")
    elif ! wait "$pid"; then
      status=1
    fi
  done
  pids=("${running[@]}")
  if ((${#pids[@]} == 0)); then break; fi
  if ((status != 0)); then kill "${pids[@]}" 2>/dev/null; fi
  sleep 0.2
done
exit $status
