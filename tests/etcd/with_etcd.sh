#!/usr/bin/env bash
# Runs a command against a real single-member etcd started for it, then stops etcd and removes its
# data, whatever the command did. For the ctest tests that run the examples on etcd.
#
#   with_etcd.sh [--timeout S] [--expect REGEX]... -- COMMAND [ARGS...]
#
# Every argument equal to {store} is replaced by the store URL, etcd://127.0.0.1:PORT, which is also
# exported as MEMLOOM_STORE_URL (for programs that read it without a launcher; memloom-run itself
# takes --store {store}). Passes when the command exits 0, its output (stdout and stderr) matches
# every --expect (grep -E), and the store's revision grew: a command that quietly used another
# store fails. The command runs under `timeout S` (default 300) so that this script, not ctest,
# ends a hang and still cleans up.
set -uo pipefail

timeout_s=300
expects=()
while [[ $# -gt 0 && "$1" != "--" ]]; do
  case "$1" in
    --timeout) timeout_s="$2"; shift 2 ;;
    --expect) expects+=("$2"); shift 2 ;;
    *) echo "with_etcd.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ "${1:-}" == "--" ]] && shift
[[ $# -gt 0 ]] || { echo "with_etcd.sh: no command" >&2; exit 2; }
command -v etcd >/dev/null || { echo "with_etcd.sh: etcd not on PATH (etcd-server)" >&2; exit 2; }

# In memory, as tests/etcd/etcd_cluster.cpp does: etcd syncs every write, and on a shared CI disk
# the tests would measure the disk. The "memloom" name lets CI's /dev/shm check catch a leftover.
data_dir=$(mktemp -d /dev/shm/memloom-etcd-test-XXXXXX) || exit 2
output="$data_dir/output.log"
etcd_pid=""
cleanup() {
  if [[ -n "$etcd_pid" ]]; then
    kill -KILL "$etcd_pid" 2>/dev/null
    wait "$etcd_pid" 2>/dev/null
  fi
  rm -rf "$data_dir"
}
trap cleanup EXIT
# A signal (ctest stopping us, ^C) still runs the cleanup above.
trap 'exit 143' TERM
trap 'exit 130' INT
trap 'exit 129' HUP

# Two ports free now: a moment later etcd binds them; a lost race shows as etcd dying, retried.
free_ports() {
  python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))'
}

revision() {
  # Any range read answers with the store's current revision in its header.
  curl -sf --max-time 2 -X POST "http://127.0.0.1:$client_port/v3/kv/range" -d '{"key":"AA=="}' |
    sed -n 's/.*"revision":"\([0-9]*\)".*/\1/p'
}

started=""
for attempt in 1 2 3; do
  read -r client_port peer_port < <(free_ports) || exit 2
  client="http://127.0.0.1:$client_port"
  peer="http://127.0.0.1:$peer_port"
  # The flags of tests/etcd/etcd_cluster.cpp: quick elections, so a single member leads at once.
  # --pdeathsig: etcd dies with this script even when it is SIGKILLed (the trap cannot run then).
  setpriv --pdeathsig KILL -- etcd --name m0 --data-dir "$data_dir/m0" \
    --listen-client-urls "$client" --advertise-client-urls "$client" \
    --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
    --initial-cluster "m0=$peer" --initial-cluster-token "memloom-test-$$-$attempt" \
    --initial-cluster-state new --heartbeat-interval 50 --election-timeout 500 \
    --logger zap --log-level warn >"$data_dir/etcd.log" 2>&1 &
  etcd_pid=$!
  # Bounded: 20 s for /health to say a leader is there.
  for _ in $(seq 200); do
    if curl -sf --max-time 1 "$client/health" 2>/dev/null | grep -q '"health":"true"'; then
      started=1
      break
    fi
    kill -0 "$etcd_pid" 2>/dev/null || break
    sleep 0.1
  done
  [[ -n "$started" ]] && break
  kill -KILL "$etcd_pid" 2>/dev/null
  wait "$etcd_pid" 2>/dev/null
  etcd_pid=""
  rm -rf "$data_dir/m0"
done
if [[ -z "$started" ]]; then
  echo "with_etcd.sh: etcd did not come up; its log:" >&2
  tail -n 20 "$data_dir/etcd.log" >&2
  exit 2
fi

url="etcd://127.0.0.1:$client_port"
export MEMLOOM_STORE_URL="$url"
args=()
for arg in "$@"; do
  if [[ "$arg" == "{store}" ]]; then args+=("$url"); else args+=("$arg"); fi
done
before=$(revision)
echo "with_etcd.sh: etcd at $url (revision $before); running: ${args[*]}"

timeout -k 5 "$timeout_s" "${args[@]}" 2>&1 | tee "$output"
code=${PIPESTATUS[0]}
after=$(revision)

status=0
if [[ $code -ne 0 ]]; then
  echo "with_etcd.sh: the command exited with $code" >&2
  status=1
fi
for pattern in "${expects[@]}"; do
  if ! grep -Eq -- "$pattern" "$output"; then
    echo "with_etcd.sh: the output does not match '$pattern'" >&2
    status=1
  fi
done
if [[ -z "$before" || -z "$after" || "$after" -le "$before" ]]; then
  echo "with_etcd.sh: the command wrote nothing to etcd (revision ${before:-?} -> ${after:-?})" >&2
  status=1
fi
exit $status
