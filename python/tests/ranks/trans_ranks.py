"""A rank of the TransferEngine test: argv = folder, store URL, port of rank 0, port of rank 1,
"direct" or "network".

Rank 0 is "Prefill" (writes), rank 1 "Decode" (registers memory that rank 0 writes and reads).
Every TransferEngine method, with int addresses as upstream and with numpy arrays."""

import os
import sys
import time

import numpy as np

from rank_util import expect, rank_and_size, share
import memloom
import memfabric_hybrid as mf
from memfabric_hybrid import TransferEngine, TransferOpcode

BYTES = 1 << 20


def address(array):
    return array.__array_interface__["data"][0]


def wait_for(folder, name, timeout=60):
    deadline = time.monotonic() + timeout
    while not os.path.exists(os.path.join(folder, name)):
        expect(time.monotonic() < deadline, f"no {name} within {timeout} s")
        time.sleep(0.01)


def main():
    folder, store_url, port0, port1 = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    rank, _ = rank_and_size()
    expect(TransferOpcode.READ == TransferOpcode.Read and int(TransferOpcode.WRITE) == 1,
           "TransferOpcode values")
    names = [f"127.0.0.1:{port0}", f"127.0.0.1:{port1}"]
    engine = TransferEngine()
    expect(engine.get_rpc_port() > 0, "get_rpc_port")
    expect(engine.initialize(store_url, names[0], "Observer", 0) != 0, "a bad role was accepted")
    expect("role" in mf.get_and_clear_last_err_msg(), "no message for the bad role")
    op = TransferEngine.TransDataOpType.SDMA  # same node: direct copies
    if sys.argv[5] == "network":
        op = TransferEngine.TransDataOpType.DEVICE_RDMA  # other nodes: memloom's network path
    if rank == 0:
        expect(mf.create_config_store(store_url) == 0, mf.get_last_err_msg())
        expect(engine.initialize(store_url, names[0], "Prefill", 0, op) == 0,
               mf.get_last_err_msg())
        source = np.arange(BYTES, dtype=np.uint8)
        pieces = [np.full(4096, i, dtype=np.uint8) for i in range(4)]
        expect(engine.register_memory(address(source), BYTES) == 0, mf.get_last_err_msg())
        expect(engine.batch_register_memory([address(p) for p in pieces], [4096] * 4) == 0,
               mf.get_last_err_msg())
        target = share(folder, "decode.address", lambda: None, 1)
        peer = names[1]
        expect(engine.transfer_sync_write(peer, address(source), target, BYTES // 2) == 0,
               mf.get_last_err_msg())
        expect(engine.transfer_sync_write(peer, source[BYTES // 2:], target + BYTES // 2,
                                          BYTES // 2) == 0, mf.get_last_err_msg())
        expect(engine.batch_transfer_sync_write(
            peer, [address(p) for p in pieces], [target + BYTES + 4096 * i for i in range(4)],
            [4096] * 4) == 0, mf.get_last_err_msg())
        back = np.zeros(BYTES, dtype=np.uint8)
        expect(engine.register_memory(back, BYTES) == 0, mf.get_last_err_msg())
        expect(engine.transfer_sync_read(peer, back, target, BYTES) == 0, mf.get_last_err_msg())
        expect(np.array_equal(back, source), "read back what was written")
        stream = memloom.Stream()
        expect(engine.transfer_async_write_submit(peer, address(pieces[3]), target + 2 * BYTES,
                                                  4096, stream.handle) == 0, mf.get_last_err_msg())
        back[:4096] = 0
        expect(engine.transfer_async_read_submit(peer, back, target + 2 * BYTES, 4096,
                                                 stream.handle) == 0, mf.get_last_err_msg())
        stream.synchronize()
        expect(np.array_equal(back[:4096], pieces[3]), "async write then read")
        stream.destroy()
        # A buffer smaller than the length is refused before anything moves.
        try:
            engine.transfer_sync_write(peer, pieces[0], target, 8192)
            raise AssertionError("a 4 KiB array was sent as 8 KiB")
        except ValueError as error:
            expect("4096 bytes" in str(error), str(error))
        expect(engine.transfer_sync_write("127.0.0.1:1", address(source), target, 16) != 0,
               "a write to an unknown peer succeeded")
        expect(mf.get_last_err_msg() != "", "no message for the unknown peer")
        for array in [source, back] + pieces:
            expect(engine.unregister_memory(address(array)) == 0, mf.get_last_err_msg())
        open(os.path.join(folder, "prefill.done"), "w").close()
        wait_for(folder, "decode.done")
    else:
        deadline = time.monotonic() + 60
        while engine.initialize(store_url, names[1], "Decode", 0, op) != 0:
            expect(time.monotonic() < deadline, "no config store: " + mf.get_last_err_msg())
            time.sleep(0.2)
        target = np.zeros(3 * BYTES, dtype=np.uint8)
        expect(engine.register_memory(address(target), target.nbytes) == 0,
               mf.get_last_err_msg())
        share(folder, "decode.address", lambda: address(target), 0)
        wait_for(folder, "prefill.done")
        expect(np.array_equal(target[:BYTES], np.arange(BYTES, dtype=np.uint8)), "sync writes")
        for i in range(4):
            piece = target[BYTES + 4096 * i:BYTES + 4096 * (i + 1)]
            expect(np.all(piece == i), f"batch piece {i}")
        expect(np.all(target[2 * BYTES:2 * BYTES + 4096] == 3), "async write")
        expect(engine.unregister_memory(address(target)) == 0, mf.get_last_err_msg())
        open(os.path.join(folder, "decode.done"), "w").close()
    engine.destroy()
    engine.unInitialize()
    print(f"rank {rank} ok")


if __name__ == "__main__":
    main()
