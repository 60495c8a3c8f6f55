"""WholeMemory communicators for torch programs (upstream's pylibwholegraph/torch/comm.py API).

Communicator ids travel over torch.distributed, as upstream: NCCL (CUDA tensors) when the
process group runs NCCL, else over CPU tensors (gloo)."""

import torch
import torch.distributed as dist

from memloom import wholememory as _wm
from .utils import (
    str_to_wmb_wholememory_distributed_backend_type,
    str_to_wmb_wholememory_location,
    str_to_wmb_wholememory_memory_type,
    wholememory_distributed_backend_type_to_str,
)

global_communicators = {}
local_node_communicator = None
local_device_communicator = None
local_mnnvl_communicator = None

all_comm_world_rank = 0
all_comm_world_size = 1
all_comm_local_rank = 0
all_comm_local_size = 1


def reset_communicators():
    global global_communicators, local_node_communicator, local_device_communicator
    global local_mnnvl_communicator, all_comm_world_rank, all_comm_world_size
    global all_comm_local_rank, all_comm_local_size
    global_communicators = {}
    local_node_communicator = None
    local_device_communicator = None
    local_mnnvl_communicator = None
    all_comm_world_rank, all_comm_world_size = 0, 1
    all_comm_local_rank, all_comm_local_size = 0, 1


def set_world_info(world_rank: int, world_size: int, local_rank: int, local_size: int):
    """Records this process's place in the job, for the communicators below."""
    global all_comm_world_rank, all_comm_world_size, all_comm_local_rank, all_comm_local_size
    all_comm_world_rank, all_comm_world_size = world_rank, world_size
    all_comm_local_rank, all_comm_local_size = local_rank, local_size


class WholeMemoryCommunicator(object):
    """A WholeMemory communicator; made by the functions below, not directly."""

    def __init__(self, wmb_comm):
        super().__init__()
        self.wmb_comm = wmb_comm

    def get_rank(self):
        return self.wmb_comm.rank

    def get_size(self):
        return self.wmb_comm.size

    def get_clique_info(self):
        """(is_in_clique, clique_first_rank, clique_rank, clique_rank_num, clique_id,
        clique_num); a clique is the ranks of one node."""
        return self.wmb_comm.clique_info()

    def barrier(self):
        return self.wmb_comm.barrier()

    def support_type_location(self, memory_type: str, memory_location: str):
        return self.wmb_comm.support_type_location(
            str_to_wmb_wholememory_memory_type(memory_type),
            str_to_wmb_wholememory_location(memory_location))

    def destroy(self):
        self.wmb_comm.destroy()
        self.wmb_comm = None

    @property
    def distributed_backend(self):
        return wholememory_distributed_backend_type_to_str(self.wmb_comm.distributed_backend)

    @distributed_backend.setter
    def distributed_backend(self, value):
        self.wmb_comm.distributed_backend = str_to_wmb_wholememory_distributed_backend_type(value)


def _id_device():
    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def create_group_communicator(group_size: int = -1, comm_stride: int = 1):
    """Collective over the torch.distributed world: splits it into groups of group_size ranks
    (-1: one group of all), rank r of a block of group_size * comm_stride ranks joining group
    r % comm_stride of that block, and returns this rank's group's communicator."""
    world_size = dist.get_world_size()
    world_rank = dist.get_rank()
    if group_size == -1:
        group_size = world_size
    block = group_size * comm_stride
    if block <= 0 or world_size % block != 0:
        raise ValueError(f"world size {world_size} is not a multiple of group_size * comm_stride "
                         f"= {block}")
    my_block, in_block = divmod(world_rank, block)
    my_group_in_block = in_block % comm_stride
    my_rank_in_group = in_block // comm_stride
    device = _id_device()
    my_id = None
    # Every group's first rank makes its id; each is broadcast to all (a collective per group).
    for block_index in range(world_size // block):
        for group_in_block in range(comm_stride):
            root = block_index * block + group_in_block
            if world_rank == root:
                payload = bytearray(_wm.create_unique_id())
            else:
                payload = bytearray(128)
            buffer = torch.frombuffer(payload, dtype=torch.uint8).to(device)
            dist.broadcast(buffer, root)
            if block_index == my_block and group_in_block == my_group_in_block:
                my_id = bytes(buffer.cpu().numpy().tobytes())
    return WholeMemoryCommunicator(
        _wm.create_communicator(my_id, my_rank_in_group, group_size))


def split_communicator(comm: WholeMemoryCommunicator, color: int, key: int = 0):
    """Collective over comm: ranks of one color form a new communicator ordered by key (then by
    rank); a negative color stays out and gets None."""
    if not isinstance(color, int) or not isinstance(key, int):
        raise TypeError("color and key must be int")
    new_comm = comm.wmb_comm.split(color if color >= 0 else -1, key)
    return None if new_comm is None else WholeMemoryCommunicator(new_comm)


def destroy_communicator(wm_comm: WholeMemoryCommunicator):
    if wm_comm is not None and wm_comm.wmb_comm is not None:
        wm_comm.destroy()


def comm_set_distributed_backend(wm_comm: WholeMemoryCommunicator, distributed_backend: str):
    wm_comm.distributed_backend = distributed_backend


def get_global_communicator(distributed_backend="nccl"):
    """The communicator of every rank of the job (made on first use)."""
    global local_node_communicator, local_device_communicator
    if distributed_backend not in global_communicators:
        comm = create_group_communicator()
        comm_set_distributed_backend(comm, distributed_backend)
        global_communicators[distributed_backend] = comm
        if distributed_backend == "nccl":
            if local_node_communicator is None and all_comm_local_size == all_comm_world_size:
                local_node_communicator = comm
            if local_device_communicator is None and all_comm_world_size == 1:
                local_device_communicator = comm
    return global_communicators[distributed_backend]


def get_local_node_communicator():
    """The communicator of the ranks of this node."""
    global local_node_communicator, local_device_communicator
    if local_node_communicator is None:
        local_node_communicator = create_group_communicator(all_comm_local_size)
        if all_comm_local_size == all_comm_world_size:
            global_communicators.setdefault("nccl", local_node_communicator)
        if all_comm_local_size == 1 and local_device_communicator is None:
            local_device_communicator = local_node_communicator
    return local_node_communicator


def get_local_device_communicator():
    """A communicator of this rank alone."""
    global local_node_communicator, local_device_communicator
    if local_device_communicator is None:
        local_device_communicator = create_group_communicator(1)
        if all_comm_local_size == 1 and local_node_communicator is None:
            local_node_communicator = local_device_communicator
        if all_comm_world_size == 1:
            global_communicators.setdefault("nccl", local_device_communicator)
    return local_device_communicator


def get_local_mnnvl_communicator():
    """The communicator of this rank's clique (for memloom: its node)."""
    global local_mnnvl_communicator
    if local_mnnvl_communicator is None:
        comm = get_global_communicator()
        is_in_clique, _, _, _, clique_id, _ = comm.get_clique_info()
        if not is_in_clique:
            raise RuntimeError("this rank is in no clique: no local mnnvl communicator")
        local_mnnvl_communicator = split_communicator(comm, clique_id)
    return local_mnnvl_communicator
