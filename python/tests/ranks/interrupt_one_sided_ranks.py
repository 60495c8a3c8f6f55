"""A rank of the Ctrl-C-during-a-one-sided-call tests: argv = folder, "trans", "bm" or "bm-queued"
(a BM copy queued behind another thread's copy of the same object), store URL,
port of rank 0, port of rank 1.

The ranks are on two emulated nodes, so rank 0's TRANS write (TransferEngine on the network path)
or BM copy (into rank 1's slot) goes over TCP and needs rank 1 to answer. Rank 0 makes one call
that works, says "armed" and waits for a line on stdin; the test stops rank 1 (SIGSTOP) and sends
"go"; rank 0 says "waiting" and makes the same call, which waits on the stopped peer until the
test's SIGINT. Rank 0 says "interrupted <monotonic time>" for the KeyboardInterrupt, waits for
"resumed" on stdin (the test has sent SIGCONT), makes the call again and checks that the bytes
arrived ("reused ok"). Then both ranks end normally (the file "done" tells rank 1)."""

import mmap
import os
import sys
import threading
import time

import numpy as np

from rank_util import expect, rank_and_size, share
import memfabric_hybrid as mf
from memfabric_hybrid import TransferEngine, bm

BYTES = 4 << 20  # more than the socket buffers hold: the call must wait for the peer
SLOT = 8 << 20


def address(array):
    return array.__array_interface__["data"][0]


def page_aligned(size):
    """A numpy array over page-aligned memory (BM registration wants 4 KiB alignment)."""
    return np.frombuffer(mmap.mmap(-1, size), dtype=np.uint8)


def wait_for_file(folder, name, timeout=120):
    deadline = time.monotonic() + timeout
    while not os.path.exists(os.path.join(folder, name)):
        expect(time.monotonic() < deadline, f"no {name} within {timeout} s")
        time.sleep(0.01)


def read_command(expected):
    line = sys.stdin.readline().strip()
    expect(line == expected, f"expected {expected!r} on stdin, got {line!r}")


def trans_rank(folder, store_url, names, rank):
    """Returns (call, check, finish) for rank 0; serves for rank 1 until "done"."""
    engine = TransferEngine()
    op = TransferEngine.TransDataOpType.DEVICE_RDMA  # memloom's network path
    if rank == 1:
        deadline = time.monotonic() + 60
        while engine.initialize(store_url, names[1], "Decode", 0, op) != 0:
            expect(time.monotonic() < deadline, "no config store: " + mf.get_last_err_msg())
            time.sleep(0.2)
        target = np.zeros(BYTES, dtype=np.uint8)
        expect(engine.register_memory(address(target), target.nbytes) == 0,
               mf.get_last_err_msg())
        share(folder, "target.address", lambda: address(target), 0)
        wait_for_file(folder, "done")
        engine.destroy()
        engine.unInitialize()
        return None
    expect(mf.create_config_store(store_url) == 0, mf.get_last_err_msg())
    expect(engine.initialize(store_url, names[0], "Prefill", 0, op) == 0, mf.get_last_err_msg())
    source = np.zeros(BYTES, dtype=np.uint8)
    back = np.zeros(BYTES, dtype=np.uint8)
    expect(engine.register_memory(source, BYTES) == 0, mf.get_last_err_msg())
    expect(engine.register_memory(back, BYTES) == 0, mf.get_last_err_msg())
    target = share(folder, "target.address", lambda: None, 1)

    def call(fill):
        source[:] = fill
        return engine.transfer_sync_write(names[1], address(source), target, BYTES)

    def check(fill):
        back[:] = 0
        expect(engine.transfer_sync_read(names[1], back, target, BYTES) == 0,
               mf.get_last_err_msg())
        return bool(np.all(back == fill))

    def finish():
        engine.destroy()
        engine.unInitialize()

    return call, check, finish


def bm_rank(folder, store_url, rank):
    config = bm.BmConfig()
    config.auto_ranking = False
    config.rank_id = rank
    config.operation_timeout = 60
    config.set_nic("127.0.0.1")
    expect(bm.initialize(store_url, 2, rank, config) == 0, mf.get_last_err_msg())
    memory = bm.create(0, SLOT, SLOT, bm.BmDataOpType.SDMA | bm.BmDataOpType.HOST_TCP)
    expect(memory.join() == 0, "join")

    def finish():
        expect(memory.leave() == 0, "leave")
        memory.destroy()
        bm.uninitialize()

    if rank == 1:
        open(os.path.join(folder, "joined.1"), "w").close()
        wait_for_file(folder, "done")
        finish()
        return None
    wait_for_file(folder, "joined.1")
    peer_slot = memory.peer_rank_ptr(1, bm.BmMemType.DEVICE)
    source, back = page_aligned(BYTES), page_aligned(BYTES)
    expect(memory.register(address(source), BYTES) == 0, mf.get_last_err_msg())
    expect(memory.register(address(back), BYTES) == 0, mf.get_last_err_msg())

    def call(fill):
        source[:] = fill
        memory.copy_data(address(source), peer_slot, BYTES, bm.BmCopyType.H2G)
        return 0

    def check(fill):
        back[:] = 0
        memory.copy_data(peer_slot, address(back), BYTES, bm.BmCopyType.G2H)
        return bool(np.all(back == fill))

    def finish_rank0():
        expect(memory.unregister(address(source)) == 0, mf.get_last_err_msg())
        expect(memory.unregister(address(back)) == 0, mf.get_last_err_msg())
        finish()

    return call, check, finish_rank0


def main():
    folder, mode, store_url, port0, port1 = sys.argv[1:6]
    rank, _ = rank_and_size()
    names = [f"127.0.0.1:{port0}", f"127.0.0.1:{port1}"]
    expect(mf.initialize() == 0, mf.get_last_err_msg())
    made = trans_rank(folder, store_url, names, rank) if mode == "trans" else bm_rank(
        folder, store_url, rank)
    if rank == 1:
        print("rank 1 ok", flush=True)
        return
    call, check, finish = made
    expect(call(1) == 0 and check(1), "the first call: " + mf.get_last_err_msg())
    print("armed", flush=True)
    read_command("go")
    queued = None
    if mode == "bm-queued":
        # Another thread's copy to the stopped peer holds the object's synchronous copy stream:
        # this thread's copy waits for it, and Ctrl-C must reach that wait too. (Signals reach
        # the main thread only, so the other thread's copy ends once the peer resumes.)
        queued = threading.Thread(target=call, args=(2,))
        queued.start()
        time.sleep(0.3)  # well inside its wait on the peer
    print("waiting", flush=True)
    try:
        code = call(2)
        print(f"not interrupted: {code} {mf.get_last_err_msg()}", flush=True)
        sys.exit(3)
    except KeyboardInterrupt:
        print("interrupted %.3f" % time.monotonic(), flush=True)
    read_command("resumed")
    if queued is not None:
        queued.join(60)
        expect(not queued.is_alive(), "the queued copy did not end once the peer resumed")
    expect(call(3) == 0, "the call after the interruption: " + mf.get_last_err_msg())
    expect(check(3), "the call after the interruption did not write its bytes")
    print("reused ok", flush=True)
    open(os.path.join(folder, "done"), "w").close()
    finish()
    print("rank 0 ok", flush=True)


if __name__ == "__main__":
    main()
