"""A rank of the pylibwholegraph.torch test, as a GNN script would use it: argv = a folder for
files, then the distributed_launch options. Prints "rank R ok"."""

import argparse
import os
import sys

import torch

from rank_util import expect
import pylibwholegraph.torch as wgth

ROWS, COLUMNS = 999, 12


def check_tensor(comm, memory_type, location, folder):
    rank, size = comm.get_rank(), comm.get_size()
    tensor = wgth.create_wholememory_tensor(comm, memory_type, location, [ROWS, COLUMNS],
                                            torch.float32, None)
    expect(tensor.shape == torch.Size([ROWS, COLUMNS]) and tensor.dtype == torch.float32 and
           tensor.dim() == 2 and tensor.stride() == (COLUMNS, 1), "tensor properties")
    local, start = tensor.get_local_tensor(host_view=True)
    device_local, device_start = tensor.get_local_tensor()
    expect(local.data_ptr() == device_local.data_ptr() and start == device_start,
           "host and device views of emulated memory are one memory")
    rows = torch.arange(start, start + local.shape[0], dtype=torch.float32)[:, None]
    local.copy_(rows * 100 + torch.arange(COLUMNS, dtype=torch.float32))
    del local, device_local
    comm.barrier()

    def expected(indices):
        return indices.to(torch.float32)[:, None] * 100 + torch.arange(COLUMNS,
                                                                         dtype=torch.float32)

    indices = torch.randint(0, ROWS, (300,), generator=torch.Generator().manual_seed(rank))
    expect(torch.equal(tensor.gather(indices), expected(indices)), f"{memory_type} gather")
    halves = tensor.gather(indices.to(torch.int32), force_dtype=torch.float64)
    expect(halves.dtype == torch.float64 and torch.equal(halves, expected(indices).double()),
           "gather with force_dtype")
    comm.barrier()
    mine = torch.arange(rank, ROWS, size)
    tensor.scatter(expected(mine) * -1, mine)
    comm.barrier()
    every = torch.arange(ROWS)
    expect(torch.equal(tensor.gather(every), expected(every) * -1), "scatter")
    if memory_type == "continuous":
        whole, offset = tensor.get_global_tensor(host_view=True)
        expect(offset == 0 and whole.shape[0] == ROWS and whole[ROWS - 1, 0] == -(ROWS - 1) * 100,
               "global tensor")
        del whole
    if memory_type in ("continuous", "chunked"):
        chunks, starts = tensor.get_all_chunked_tensor(host_view=True)
        expect(len(chunks) == size and starts[0] == 0, "chunked tensors")
        del chunks
    sub = tensor.get_sub_tensor([10, 2], [20, 6])
    expect(sub.shape == torch.Size([10, 4]), f"sub tensor shape {sub.shape}")
    prefix = os.path.join(folder, f"{memory_type}_{location}")
    tensor.to_file_prefix(prefix)
    comm.barrier()
    files = wgth.get_part_file_list(prefix, size)
    loaded = wgth.create_wholememory_tensor_from_filelist(comm, memory_type, location, files,
                                                          torch.float32, COLUMNS)
    expect(loaded.shape == tensor.shape, "loaded shape")
    expect(torch.equal(loaded.gather(every), expected(every) * -1), "from_filelist")
    wgth.destroy_wholememory_tensor(loaded)
    wgth.destroy_wholememory_tensor(tensor)


def main_func(args):
    rank, size = wgth.get_rank(), wgth.get_world_size()
    global_comm, local_comm = wgth.init_torch_env_and_create_wm_comm(
        rank, size, wgth.get_local_rank(), wgth.get_local_size(), wm_log_level="warn")
    expect(global_comm.get_rank() == rank and global_comm.get_size() == size, "global comm")
    expect(local_comm.get_size() == wgth.get_local_size(), "local node comm")
    expect(global_comm.distributed_backend == "nccl", "distributed backend")
    expect(len(global_comm.get_clique_info()) == 6, "clique info")
    tried = 0
    for memory_type in ("continuous", "chunked", "distributed", "hierarchy"):
        for location in ("cpu", "cuda"):
            if global_comm.support_type_location(memory_type, location):
                check_tensor(global_comm, memory_type, location, args.folder)
                tried += 1
    expect(tried >= 4, f"only {tried} memory kinds")
    groups = wgth.create_group_communicator(group_size=1 if size == 1 else 2, comm_stride=1)
    expect(groups.get_size() == min(size, 2), "group communicator")
    odd = wgth.split_communicator(global_comm, rank % 2)
    expect(odd.get_size() == (size + 1 - rank % 2) // 2, "split")
    wgth.destroy_communicator(odd)
    expect(wgth.get_local_device_communicator().get_size() == 1, "local device communicator")
    mnnvl = wgth.get_local_mnnvl_communicator()  # a clique is a node for memloom
    expect(mnnvl.get_size() == wgth.get_local_size(), f"mnnvl communicator {mnnvl.get_size()}")
    expect(not wgth.is_rmm_enabled(), "RMM")
    wgth.finalize()
    print(f"rank {rank} ok ({tried} memory kinds)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("folder")
    wgth.add_distributed_launch_options(parser)
    args = parser.parse_args()
    wgth.distributed_launch(args, lambda: main_func(args))


if __name__ == "__main__":
    main()
