"""A rank of the multi-rank memfabric_hybrid BM/SHM test: argv = BM store URL, SHM store URL.

Every BigMemory and ShareMemory method, every BmCopyType between this rank and the next, with
numpy buffers given as int addresses (upstream's way) and as arrays. Prints "rank R ok"."""

import mmap
import os
import sys

import numpy as np

from rank_util import expect, rank_and_size
import memfabric_hybrid as mf
from memfabric_hybrid import bm, shm

SLOT = 2 << 20
PIECE = 4096


def page_aligned(size):
    """A numpy array over page-aligned memory (BM registration wants 4 KiB alignment)."""
    return np.frombuffer(mmap.mmap(-1, size), dtype=np.uint8)


def address(array):
    return array.__array_interface__["data"][0]


def check_shm(url, rank, size):
    config = shm.ShmConfig()
    expect(config.init_timeout == 120 and config.start_store, "ShmConfig defaults")
    config.operation_timeout = 30
    expect(shm.initialize(url, size, rank, rank % 8, config) == 0, mf.get_last_err_msg())
    memory = shm.create(0, size, rank, SLOT)
    expect(memory.local_rank == rank and memory.rank_size == size and memory.gva != 0, "shm ids")
    expect(memory.query_support_data_operation() != 0, "data operations")
    memory.set_context(b"context of rank %d" % rank)
    memory.barrier()
    gathered = memory.all_gather(b"%03d" % rank)
    expect(gathered == b"".join(b"%03d" % r for r in range(size)), f"all_gather {gathered!r}")
    expect(memory.topology_can_reach((rank + 1) % size, 0) == 0, mf.get_last_err_msg())
    return memory


def check_bm(url, rank, size, barrier):
    config = bm.BmConfig()
    # MemFabric's defaults: ranks numbered by the store unless the program fixes them.
    expect(config.create_timeout == 120 and config.auto_ranking, "BmConfig defaults")
    config.auto_ranking = False
    config.rank_id = rank
    config.operation_timeout = 30
    config.set_nic("127.0.0.1")
    expect(bm.initialize(url, size, rank % 8, config) == 0, mf.get_last_err_msg())
    expect(bm.bm_rank_id() == rank, f"bm_rank_id {bm.bm_rank_id()}")
    memory = bm.create(0, SLOT, SLOT, bm.BmDataOpType.SDMA | bm.BmDataOpType.HOST_TCP)
    expect(memory.join() == 0, "join")
    barrier()
    expect(memory.local_mem_size() == SLOT, "device size")
    expect(memory.local_mem_size(bm.BmMemType.HOST) == SLOT, "host size")
    peer = (rank + 1) % size
    mine_device = memory.peer_rank_ptr(rank)
    peer_device = memory.peer_rank_ptr(peer, bm.BmMemType.DEVICE)
    mine_host = memory.peer_rank_ptr(rank, bm.BmMemType.HOST)
    peer_host = memory.peer_rank_ptr(peer, bm.BmMemType.HOST)

    source, back = page_aligned(8 * PIECE), page_aligned(8 * PIECE)
    source[:] = np.arange(source.size, dtype=np.uint8) ^ rank
    expect(memory.register(address(source), source.nbytes) == 0, mf.get_last_err_msg())
    expect(memory.register(back, back.nbytes) == 0, mf.get_last_err_msg())
    T = bm.BmCopyType
    # Into the peer's slots: host -> device slot, host -> host slot, "local device" memory ->
    # both (on the emulated backend device memory is host memory outside the GVA; on GPUs this
    # would be a CUDA allocation), and global -> global from a scratch part of this rank's slot.
    scratch = mine_device + 6 * PIECE
    memory.copy_data(address(source), peer_device, PIECE, T.H2G)
    memory.copy_data(source[PIECE:], peer_host, PIECE, T.H2GH)
    memory.copy_data(address(source) + 2 * PIECE, peer_device + PIECE, PIECE, T.L2G)
    memory.copy_data(address(source) + 2 * PIECE, peer_host + PIECE, PIECE, T.L2GH)
    memory.copy_data(address(source) + 2 * PIECE, scratch, PIECE, T.H2G)
    memory.copy_data(scratch, peer_device + 2 * PIECE, PIECE, T.G2G)
    expect(memory.copy_data_batch([address(source) + 3 * PIECE, address(source) + 4 * PIECE],
                                  [peer_device + 3 * PIECE, peer_device + 4 * PIECE],
                                  [PIECE, PIECE], 2, T.H2G, 0) == 0, mf.get_last_err_msg())
    barrier()
    # What the previous rank wrote into this rank's slots.
    writer = (rank - 1) % size
    theirs = np.arange(source.size, dtype=np.uint8) ^ writer
    memory.copy_data(mine_device, back, PIECE, T.G2H)
    expect(np.array_equal(back[:PIECE], theirs[:PIECE]), "H2G then G2H")
    memory.copy_data(mine_host, address(back), PIECE, T.GH2H)
    expect(np.array_equal(back[:PIECE], theirs[PIECE:2 * PIECE]), "H2GH then GH2H")
    for offset, expected in ((PIECE, theirs[2 * PIECE:3 * PIECE]),
                             (2 * PIECE, theirs[2 * PIECE:3 * PIECE]),
                             (3 * PIECE, theirs[3 * PIECE:4 * PIECE]),
                             (4 * PIECE, theirs[4 * PIECE:5 * PIECE])):
        memory.copy_data(mine_device + offset, address(back), PIECE, T.G2H)
        expect(np.array_equal(back[:PIECE], expected), f"device slot at {offset}")
    back[:PIECE] = 0
    memory.copy_data(mine_host + PIECE, address(back), PIECE, T.GH2L)
    expect(np.array_equal(back[:PIECE], theirs[2 * PIECE:3 * PIECE]), "L2GH then GH2L")
    # Upstream raises RuntimeError for a failed copy, and get_last_err_msg says why.
    mf.get_and_clear_last_err_msg()
    try:
        memory.copy_data(address(source), 16, PIECE, T.H2G)
        raise AssertionError("a copy to address 16 succeeded")
    except RuntimeError as error:
        expect("copy bm data failed" in str(error), str(error))
    expect(mf.get_last_err_msg() != "", "no error message after a failed copy")
    barrier()
    expect(memory.unregister(address(source)) == 0, mf.get_last_err_msg())
    expect(memory.unregister(back) == 0, mf.get_last_err_msg())
    expect(memory.leave() == 0, "leave")
    memory.destroy()
    bm.uninitialize()


def main():
    bm_url, shm_url = sys.argv[1], sys.argv[2]
    rank, size = rank_and_size()
    expect(mf.initialize() == 0, mf.get_last_err_msg())
    expect(mf.set_log_level(2) == 0, "set_log_level")
    lines = []
    expect(mf.set_extern_logger(lambda level, message: lines.append((level, message))) == 0,
           "set_extern_logger")
    shared = check_shm(shm_url, rank, size)
    check_bm(bm_url, rank, size, shared.barrier)
    expect(any(level == 3 for level, _ in lines), "the extern logger saw no error line")
    expect(mf.set_extern_logger(None) == 0, "set_extern_logger(None)")
    shared.barrier()
    shared.destroy()
    shm.uninitialize()
    mf.uninitialize()
    print(f"rank {rank} ok")


if __name__ == "__main__":
    main()
