"""Ctrl-C during a blocking wait: KeyboardInterrupt within a second, and a process that exits."""

import os
import signal
import subprocess
import sys
import time

CHILD = r"""
import sys, time
from memloom import wholememory as wm
wm.init(0, wm.LogLevel.ERROR)
uid = wm.create_unique_id()
print("waiting", flush=True)
start = None
try:
    # A communicator of 2 whose second rank never comes: waits up to MEMLOOM_TIMEOUT_S.
    wm.create_communicator(uid, 0, 2)
except KeyboardInterrupt:
    print("interrupted %.3f" % time.monotonic(), flush=True)
    sys.exit(7)
print("not interrupted", flush=True)
"""


def test_ctrl_c_during_a_collective_raises_keyboard_interrupt_quickly():
    env = dict(os.environ, MEMLOOM_TIMEOUT_S="60")
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, env=env,
                             start_new_session=True)
    try:
        assert child.stdout.readline().strip() == "waiting"
        time.sleep(1.0)  # well inside the wait
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    lines = [line for line in out.splitlines() if line.startswith("interrupted")]
    assert lines, f"no KeyboardInterrupt:\n{out}"
    latency = float(lines[0].split()[1]) - sent
    assert latency < 1.0, f"KeyboardInterrupt came {latency:.3f} s after SIGINT"
    # The interrupted call was still inside the library: the process ends by SIGINT's default
    # action at exit (as Python does for an uncaught KeyboardInterrupt), not by hanging there.
    assert child.returncode in (7, -signal.SIGINT), f"exit status {child.returncode}:\n{out}"


FORK_CHILD = r"""
import os, sys
import memfabric_hybrid as mf
# A call through the helper thread in the parent, then the same in a forked child: the child has
# no helper threads, and must start its own instead of waiting on the parent's.
assert mf.create_config_store("not a url") != 0
pid = os.fork()
if pid == 0:
    code = mf.create_config_store("not a url either")
    os._exit(0 if code != 0 else 1)
_, status = os.waitpid(pid, 0)
print("child status", status, flush=True)
"""


def test_helper_threads_after_fork():
    out = subprocess.run([sys.executable, "-c", FORK_CHILD], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=60,
                         env=dict(os.environ, MEMLOOM_LOG_LEVEL="fatal"))
    assert out.returncode == 0 and "child status 0" in out.stdout, out.stdout


def test_ctrl_c_during_a_gather_that_waits_on_a_peer(tmp_path):
    """A DISTRIBUTED gather waits for the rank that owns rows; Ctrl-C raises KeyboardInterrupt
    within a second instead of after the library's deadline."""
    from conftest import RANKS, free_port

    port = free_port()
    ranks = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank),
                   LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   MEMLOOM_TIMEOUT_S="60")
        ranks.append(subprocess.Popen(
            [sys.executable, os.path.join(RANKS, "interrupt_ranks.py"), str(tmp_path)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
            start_new_session=True))
    try:
        first = ranks[0].stdout.readline().strip()
        assert first == "waiting", f"rank 0 said {first!r}: {ranks[0].stdout.read()}"
        time.sleep(1.0)  # well inside the gather's wait
        sent = time.monotonic()
        ranks[0].send_signal(signal.SIGINT)
        out, _ = ranks[0].communicate(timeout=30)
    finally:
        for process in ranks:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    lines = [line for line in out.splitlines() if line.startswith("interrupted")]
    assert lines, f"no KeyboardInterrupt:\n{out}"
    latency = float(lines[0].split()[1]) - sent
    assert latency < 1.0, f"KeyboardInterrupt came {latency:.3f} s after SIGINT"
    assert ranks[0].returncode == 7, f"exit status {ranks[0].returncode}:\n{out}"


def _process_state(pid):
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]


def _stop_then_interrupt(caller, expect_line, stopped, what):
    """After the caller's "armed": stops `stopped` (SIGSTOP), lets the caller make its call
    ("go"), and sends SIGINT once it waits. Returns the KeyboardInterrupt's latency in s."""
    expect_line("armed")
    os.kill(stopped.pid, signal.SIGSTOP)
    deadline = time.monotonic() + 5
    while _process_state(stopped.pid) != "T":  # SIGSTOP takes effect asynchronously
        assert time.monotonic() < deadline, f"{what} did not stop"
        time.sleep(0.001)
    caller.stdin.write("go\n")
    caller.stdin.flush()
    expect_line("waiting")
    time.sleep(1.0)  # well inside the call's wait (its deadline is 60 s)
    sent = time.monotonic()
    caller.send_signal(signal.SIGINT)
    line = expect_line("interrupted")
    return float(line.split()[1]) - sent


def _ctrl_c_during_a_one_sided_call(tmp_path, mode):
    """Rank 0's call (TRANS write or BM copy, over TCP to another emulated node) waits on rank 1,
    which the test stops with SIGSTOP: Ctrl-C raises KeyboardInterrupt within a second, and once
    rank 1 is resumed the next call to it works (ranks/interrupt_one_sided_ranks.py)."""
    from conftest import RANKS, free_port

    store_url = f"tcp://127.0.0.1:{free_port()}"
    ports = [str(free_port()), str(free_port())]
    ranks = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK="0",
                   LOCAL_WORLD_SIZE="1", MEMLOOM_NODE=f"node{rank}", MEMLOOM_TIMEOUT_S="60",
                   MEMLOOM_LOG_LEVEL="fatal", PYTHONDONTWRITEBYTECODE="1")
        ranks.append(subprocess.Popen(
            [sys.executable, os.path.join(RANKS, "interrupt_one_sided_ranks.py"), str(tmp_path),
             mode, store_url, *ports],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=env, start_new_session=True))
    caller, peer = ranks
    outputs = ["", ""]
    try:
        def expect_line(expected):
            line = caller.stdout.readline()
            outputs[0] += line
            assert line.startswith(expected), f"rank 0 said {line!r}:\n{caller.stdout.read()}"
            return line

        latency = _stop_then_interrupt(caller, expect_line, peer, "rank 1")
        print(f"{mode}: KeyboardInterrupt {latency:.3f} s after SIGINT")
        os.kill(peer.pid, signal.SIGCONT)
        caller.stdin.write("resumed\n")
        caller.stdin.flush()
        out, _ = caller.communicate(timeout=60)
        outputs[0] += out
        outputs[1], _ = peer.communicate(timeout=60)
    finally:
        for process in ranks:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGCONT)
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    assert latency < 1.0, f"KeyboardInterrupt came {latency:.3f} s after SIGINT"
    assert "reused ok" in outputs[0], outputs[0]
    assert caller.returncode == 0 and peer.returncode == 0, (
        f"exit statuses {caller.returncode}, {peer.returncode}:\n--- rank 0 ---\n{outputs[0]}"
        f"\n--- rank 1 ---\n{outputs[1]}")


def test_ctrl_c_during_a_trans_write_to_a_stopped_peer(tmp_path):
    _ctrl_c_during_a_one_sided_call(tmp_path, "trans")


def test_ctrl_c_during_a_bm_copy_to_a_stopped_peer(tmp_path):
    _ctrl_c_during_a_one_sided_call(tmp_path, "bm")


def test_ctrl_c_during_a_bm_copy_queued_behind_another_threads_copy(tmp_path):
    """The copy waits for the object's stream, held by another thread's copy to the stopped
    peer, not on the peer itself."""
    _ctrl_c_during_a_one_sided_call(tmp_path, "bm-queued")


STORE = r"""
import sys
import memfabric_hybrid as mf
assert mf.create_config_store(sys.argv[1]) == 0, mf.get_last_err_msg()
print("serving", flush=True)
sys.stdin.read()  # until the test closes stdin
"""

LOOKUP = r"""
import sys, time
import numpy as np
import memfabric_hybrid as mf
from memfabric_hybrid import TransferEngine
assert mf.initialize() == 0, mf.get_last_err_msg()
engine = TransferEngine()
op = TransferEngine.TransDataOpType.DEVICE_RDMA
assert engine.initialize(sys.argv[1], sys.argv[2], "Prefill", 0, op) == 0, mf.get_last_err_msg()
source = np.zeros(4096, dtype=np.uint8)
assert engine.register_memory(source, source.nbytes) == 0, mf.get_last_err_msg()
print("armed", flush=True)
sys.stdin.readline()
print("waiting", flush=True)
try:
    # A peer this instance has not met: looked up in the config store, which does not answer.
    code = engine.transfer_sync_write("127.0.0.1:9", source, 4096, 4096)
    print(f"not interrupted: {code} {mf.get_last_err_msg()}", flush=True)
    sys.exit(3)
except KeyboardInterrupt:
    print("interrupted %.3f" % time.monotonic(), flush=True)
sys.stdin.readline()
# The store answers again: the same lookup now fails at once, as the peer is not registered.
code = engine.transfer_sync_write("127.0.0.1:9", source, 4096, 4096)
print(f"after: {code} {mf.get_last_err_msg()}", flush=True)
engine.destroy()
engine.unInitialize()
"""


def test_ctrl_c_while_a_trans_call_looks_up_a_peer_in_a_stopped_store():
    from conftest import free_port

    store_url = f"tcp://127.0.0.1:{free_port()}"
    env = dict(os.environ, MEMLOOM_TIMEOUT_S="60", MEMLOOM_LOG_LEVEL="fatal",
               PYTHONDONTWRITEBYTECODE="1")
    store = subprocess.Popen([sys.executable, "-c", STORE, store_url], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                             start_new_session=True)
    caller = None
    output = ""
    try:
        assert store.stdout.readline().strip() == "serving"
        caller = subprocess.Popen(
            [sys.executable, "-c", LOOKUP, store_url, f"127.0.0.1:{free_port()}"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=env, start_new_session=True)

        def expect_line(expected):
            nonlocal output
            line = caller.stdout.readline()
            output += line
            assert line.startswith(expected), f"caller said {line!r}:\n{caller.stdout.read()}"
            return line

        latency = _stop_then_interrupt(caller, expect_line, store, "the store")
        os.kill(store.pid, signal.SIGCONT)
        caller.stdin.write("resumed\n")
        caller.stdin.flush()
        out, _ = caller.communicate(timeout=60)
        output += out
    finally:
        for process in (caller, store):
            if process is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGCONT)
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    assert latency < 1.0, f"KeyboardInterrupt came {latency:.3f} s after SIGINT"
    after = [line for line in output.splitlines() if line.startswith("after:")]
    assert after and after[0].split()[1] != "0", output
    assert "127.0.0.1:9" in after[0], output  # names the peer it could not find
    assert caller.returncode == 0, f"exit status {caller.returncode}:\n{output}"
