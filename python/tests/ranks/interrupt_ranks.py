"""A rank of the Ctrl-C-during-a-gather test: argv = folder (for the unique id).

Both ranks make a DISTRIBUTED table; then rank 1 stays away from the collective gather, so rank
0's gather waits for it, and the test sends rank 0 a SIGINT."""

import os
import sys
import time

import numpy as np

from rank_util import rank_and_size, share
from memloom import wholememory as wm


def main():
    folder = sys.argv[1]
    rank, size = rank_and_size()
    wm.init(0, wm.LogLevel.ERROR)
    comm = wm.create_communicator(share(folder, "comm.id", wm.create_unique_id, rank), rank, size)
    table = wm.create_tensor(comm, (1000, 4), np.float32, wm.MemoryType.DISTRIBUTED,
                             wm.MemoryLocation.HOST)
    comm.barrier()
    if rank == 1:
        time.sleep(30)  # the test ends the job long before
        return
    indices = np.arange(0, 1000, 7, dtype=np.int64)  # rows of both ranks
    output = np.zeros((len(indices), 4), np.float32)
    print("waiting", flush=True)
    try:
        table.gather(indices, output)
    except KeyboardInterrupt:
        print("interrupted %.3f" % time.monotonic(), flush=True)
        os._exit(7)  # the gather is still inside the library until its own deadline
    print("not interrupted", flush=True)


if __name__ == "__main__":
    main()
