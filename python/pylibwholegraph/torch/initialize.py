"""Set-up and tear-down (upstream's pylibwholegraph/torch/initialize.py API). Without CUDA the
torch process group runs gloo instead of NCCL, so the same script runs on a CPU-only machine."""

import os

import torch
import torch.distributed

from memloom import wholememory as _wm
from .comm import (
    get_global_communicator,
    get_local_node_communicator,
    reset_communicators,
    set_world_info,
)
from .utils import str_to_wmb_wholememory_log_level


def is_rmm_enabled():
    """RMM is not part of memloom."""
    return False


def init(world_rank: int, world_size: int, local_rank: int, local_size: int,
         wm_log_level="info"):
    _wm.init(0, str_to_wmb_wholememory_log_level(wm_log_level))
    set_world_info(world_rank, world_size, local_rank, local_size)


def init_torch_env(world_rank: int, world_size: int, local_rank: int, local_size: int,
                   wm_log_level="info"):
    """Initialises WholeMemory and torch.distributed (env:// rendezvous at MASTER_ADDR and
    MASTER_PORT, defaults localhost:12335 as upstream)."""
    os.environ["RANK"] = str(world_rank)
    os.environ["WORLD_SIZE"] = str(world_size)
    if "MASTER_ADDR" not in os.environ:
        if world_rank == 0:
            print("[WARNING] MASTER_ADDR not set, resetting to localhost")
        os.environ["MASTER_ADDR"] = "localhost"
    if "MASTER_PORT" not in os.environ:
        if world_rank == 0:
            print("[WARNING] MASTER_PORT not set, resetting to 12335")
        os.environ["MASTER_PORT"] = "12335"
    _wm.init(0, str_to_wmb_wholememory_log_level(wm_log_level))
    torch.set_num_threads(1)
    backend = "gloo"
    # As upstream: one GPU per local rank, NCCL between them. Unlike upstream, memloom's emulated
    # backend (MEMLOOM_BACKEND=emulated) keeps torch on the CPU even where GPUs exist, so that
    # more ranks than GPUs can share a machine, as they do on a CPU-only one.
    if torch.cuda.is_available() and os.environ.get("MEMLOOM_BACKEND") != "emulated":
        torch.cuda.set_device(local_rank)
        backend = "nccl"
    torch.distributed.init_process_group(backend=backend, init_method="env://")
    set_world_info(world_rank, world_size, local_rank, local_size)


def init_torch_env_and_create_wm_comm(world_rank: int, world_size: int, local_rank: int,
                                      local_size: int, distributed_backend_type="nccl",
                                      wm_log_level="info"):
    """init_torch_env, then (global communicator, local node communicator)."""
    init_torch_env(world_rank, world_size, local_rank, local_size, wm_log_level)
    return get_global_communicator(distributed_backend_type), get_local_node_communicator()


def finalize():
    """Frees everything WholeMemory holds in this process and ends torch.distributed."""
    _wm.finalize()
    reset_communicators()
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
