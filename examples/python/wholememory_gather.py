"""An embedding table spread over 4 ranks on 2 (emulated) nodes, filled and read from torch
through zero-copy DLPack views, gathered at random rows (most held by other ranks), checked.

    python3 examples/python/wholememory_gather.py [--ranks 4] [--nodes 2] [--rows 100000]

starts the ranks itself, torchrun-style (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
MASTER_ADDR, MASTER_PORT, and MEMLOOM_NODE per node); under torchrun or memloom-run (with
MASTER_ADDR / MASTER_PORT set) each rank runs the body directly. The communicator's unique id is
plain bytes: torch.distributed broadcasts it like any picklable object."""

import argparse
import os
import subprocess
import sys
import time

import launch_ports  # beside this script

COLUMNS = 128  # float32: 512-byte rows


def rank_body(args):
    import torch
    import torch.distributed as dist

    from memloom import wholememory as wm

    rank = int(os.environ.get("RANK", os.environ.get("MEMLOOM_RANK", "0")))
    size = int(os.environ.get("WORLD_SIZE", os.environ.get("MEMLOOM_WORLD_SIZE", "1")))
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=size)
    wm.init(0, wm.LogLevel.WARN)
    box = [wm.create_unique_id() if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    comm = wm.create_communicator(box[0], rank, size)
    memory_type = (wm.MemoryType.CONTINUOUS if comm.is_intranode() else wm.MemoryType.HIERARCHY)
    table = wm.create_tensor(comm, (args.rows, COLUMNS), "float32", memory_type,
                             wm.MemoryLocation.DEVICE)

    view = table.local_view()
    local = torch.from_dlpack(view)  # zero copy: writing `local` writes the table
    assert local.data_ptr() == view.ptr, "DLPack view was copied"
    first = table.local_entry_start
    rows = torch.arange(first, first + local.shape[0], dtype=torch.float32)
    local.copy_(rows[:, None] + torch.arange(COLUMNS, dtype=torch.float32) / COLUMNS)
    del local, view
    comm.barrier()

    indices = torch.randint(0, args.rows, (args.gather,),
                            generator=torch.Generator().manual_seed(rank))
    output = torch.empty((args.gather, COLUMNS), dtype=torch.float32)
    start = time.perf_counter()
    table.gather(indices, output)  # indices and output cross by DLPack, not copied
    took = time.perf_counter() - start
    expected = indices.to(torch.float32)[:, None] + torch.arange(COLUMNS) / COLUMNS
    good = torch.equal(output, expected)
    print(f"rank {rank}/{size} on {os.environ.get('MEMLOOM_NODE', 'this host')}: gathered "
          f"{args.gather} rows of {COLUMNS * 4} B from a {memory_type.name} table in "
          f"{took * 1e3:.1f} ms ({args.gather / took / 1e6:.2f} M rows/s), "
          f"{'correct' if good else 'WRONG'}", flush=True)
    comm.barrier()
    table.destroy()
    comm.destroy()
    # Rank 0 hosts the config store (create_unique_id started it): it finalizes last.
    if rank != 0:
        wm.finalize()
    dist.barrier()
    if rank == 0:
        wm.finalize()
    dist.destroy_process_group()
    return 0 if good else 1


def launch(args):
    port = launch_ports.master_port()
    per_node = args.ranks // args.nodes
    children = []
    for rank in range(args.ranks):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(args.ranks),
                   LOCAL_RANK=str(rank % per_node), LOCAL_WORLD_SIZE=str(per_node),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   MEMLOOM_NODE=f"gather-node{rank // per_node}")
        children.append(subprocess.Popen([sys.executable, __file__, *sys.argv[1:]], env=env))
    failed = False
    for child in children:
        try:
            failed = child.wait(timeout=300) != 0 or failed
        except subprocess.TimeoutExpired:
            failed = True
    for child in children:
        if child.poll() is None:
            child.kill()
            child.wait()
    print("wholememory_gather: " + ("FAILED" if failed else "ok"))
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--rows", type=int, default=100000)
    parser.add_argument("--gather", type=int, default=200000)
    args = parser.parse_args()
    if "MASTER_PORT" in os.environ:  # a launcher (this script, torchrun, memloom-run) started us
        sys.exit(rank_body(args))
    if args.ranks % args.nodes != 0:
        parser.error("--ranks must be a multiple of --nodes")
    sys.exit(launch(args))


if __name__ == "__main__":
    main()
