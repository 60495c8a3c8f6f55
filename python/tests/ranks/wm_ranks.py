"""A rank of the multi-rank memloom.wholememory test: argv = folder (for the unique id).

Every memory type and location the communicator supports: fill through the zero-copy local view,
gather with numpy and torch indices, scatter, global and per-rank views, file store and load,
communicator split. Prints "rank R ok" at the end."""

import os
import sys

import numpy as np
import torch

from rank_util import expect, rank_and_size, share
from memloom import wholememory as wm

ROWS, COLUMNS = 1003, 8


def check_tensor(comm, rank, size, memory_type, location, folder):
    tensor = wm.create_tensor(comm, (ROWS, COLUMNS), np.float32, memory_type, location)
    offsets = tensor.entry_offsets()
    expect(len(offsets) == size + 1 and offsets[-1] == ROWS, f"entry offsets {offsets}")
    start, count = tensor.local_entry_start, tensor.local_entry_count
    expect(start == offsets[rank] and count == offsets[rank + 1] - start, "local entries")

    local = np.asarray(tensor.local_view())  # zero copy: writes land in WholeMemory
    expect(local.shape == (count, COLUMNS), f"local view shape {local.shape}")
    rows = np.arange(start, start + count, dtype=np.float32)[:, None]
    local[:] = rows * 10 + np.arange(COLUMNS, dtype=np.float32)
    expect(np.from_dlpack(tensor.local_view()).__array_interface__["data"][0] ==
           tensor.local_view().ptr, "numpy.from_dlpack made a copy")
    local_torch = torch.from_dlpack(tensor.local_view())
    expect(local_torch.data_ptr() == tensor.local_view().ptr, "torch.from_dlpack made a copy")
    del local, local_torch
    comm.barrier()

    def expected(indices):
        return indices.astype(np.float32)[:, None] * 10 + np.arange(COLUMNS, dtype=np.float32)

    generator = np.random.default_rng(rank)
    indices = generator.integers(0, ROWS, size=257).astype(np.int64)
    gathered = wm.gather(tensor, indices)
    expect(np.array_equal(gathered, expected(indices)), f"{memory_type} numpy gather")
    torch_indices = torch.from_numpy(indices.astype(np.int32))
    torch_out = torch.empty((len(indices), COLUMNS), dtype=torch.float32)
    tensor.gather(torch_indices, torch_out)
    expect(torch.equal(torch_out, torch.from_numpy(expected(indices))), "torch gather")
    comm.barrier()

    # Each rank scatters its own rows + 1 then every rank checks all rows.
    mine = np.arange(rank, ROWS, size, dtype=np.int64)
    tensor.scatter(expected(mine) + 1, mine)
    comm.barrier()
    everything = np.arange(ROWS, dtype=np.int64)
    expect(np.array_equal(wm.gather(tensor, everything), expected(everything) + 1), "scatter")

    if memory_type == wm.MemoryType.CONTINUOUS:
        whole = np.asarray(tensor.global_view())
        expect(whole.shape == (ROWS, COLUMNS) and whole[ROWS - 1, 1] == (ROWS - 1) * 10 + 2,
               "global view")
        del whole
    if memory_type in (wm.MemoryType.CONTINUOUS, wm.MemoryType.CHUNKED):
        views, firsts = tensor.rank_views()
        expect(list(firsts) == list(offsets[:-1]), "rank view starts")
        last = np.asarray(views[-1])
        expect(last[-1, 0] == (ROWS - 1) * 10 + 1, "rank view contents")
        del views, last
    comm.barrier()

    # Store every rank's part, load the concatenation into a new tensor.
    name = os.path.join(folder, f"{memory_type.name}_{location.name}_part_{rank}")
    tensor.store_to_file(name)
    comm.barrier()
    loaded = wm.create_tensor(comm, (ROWS, COLUMNS), np.float32, memory_type, location)
    loaded.load_from_file([os.path.join(folder, f"{memory_type.name}_{location.name}_part_{r}")
                           for r in range(size)])
    expect(np.array_equal(wm.gather(loaded, everything), expected(everything) + 1), "file I/O")
    loaded.destroy()
    tensor.destroy()


def main():
    folder = sys.argv[1]
    rank, size = rank_and_size()
    wm.init()
    unique_id = share(folder, "comm.id", wm.create_unique_id, rank)
    expect(isinstance(unique_id, bytes) and len(unique_id) == 128, "unique id is 128 bytes")
    comm = wm.create_communicator(unique_id, rank, size)
    expect(comm.rank == rank and comm.size == size, "rank / size")
    info = comm.clique_info()
    expect(len(info) == 6 and info[0] == 1, f"clique info {info}")
    comm.barrier()
    tried = 0
    for memory_type in (wm.MemoryType.CONTINUOUS, wm.MemoryType.CHUNKED,
                        wm.MemoryType.DISTRIBUTED, wm.MemoryType.HIERARCHY):
        for location in (wm.MemoryLocation.HOST, wm.MemoryLocation.DEVICE):
            if comm.support_type_location(memory_type, location):
                check_tensor(comm, rank, size, memory_type, location, folder)
                tried += 1
    expect(tried >= 4, f"only {tried} type/location pairs supported")
    half = comm.split(rank % 2, rank)
    expect(half.size == (size + 1 - rank % 2) // 2, f"split size {half.size}")
    half.barrier()
    half.destroy()
    comm.destroy()
    wm.finalize()
    print(f"rank {rank} ok ({tried} memory kinds)")


if __name__ == "__main__":
    main()
