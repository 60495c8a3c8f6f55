"""memloom.wholememory's remaining calls in one process: device count, partition plans,
communicator properties and split, distributed backends, entry partitions, sub-tensors,
memloom.Stream."""

import numpy as np
import pytest

import memloom
from memloom import wholememory as wm


def test_plans_and_devices():
    assert wm.fork_get_device_count() >= 1
    assert wm.equal_entry_partition_plan(10, 3) == 4
    with pytest.raises(wm.WholeMemoryError):
        wm.equal_entry_partition_plan(10, 0)


def test_communicator_properties(comm):
    assert (comm.rank, comm.size, comm.local_size) == (0, 1, 1)
    assert comm.is_intranode()
    assert comm.support_type_location(wm.MemoryType.CONTINUOUS, wm.MemoryLocation.DEVICE)
    comm.distributed_backend = wm.DistributedBackend.NCCL
    assert comm.distributed_backend == wm.DistributedBackend.NCCL
    with pytest.raises(wm.WholeMemoryError) as refused:
        comm.distributed_backend = wm.DistributedBackend.NVSHMEM
    assert refused.value.code_name == "NOT_SUPPORTED"
    assert comm.split(-1) is None  # WHOLEMEMORY_SPLIT_NOCOLOR: this rank stays out
    alone = comm.split(3, 0)
    assert alone.size == 1
    alone.destroy()


def test_partitions_sub_tensors_and_properties(comm):
    tensor = wm.create_tensor(comm, (12, 3), "int32", wm.MemoryType.CHUNKED,
                              wm.MemoryLocation.HOST, strides=[4, 1], entry_partition=[12])
    assert tensor.shape == (12, 3) and tensor.stride() == (4, 1) and tensor.dim() == 2
    assert tensor.dtype == wm.DType.INT and tensor.storage_offset() == 0
    assert tensor.memory_type == wm.MemoryType.CHUNKED
    assert tensor.memory_location == wm.MemoryLocation.HOST
    assert tensor.comm.size == 1 and tensor.entry_offsets() == [0, 12]
    local = np.asarray(tensor.local_view())
    assert local.shape == (12, 3) and local.strides == (16, 4)  # the row stride is kept
    local[:] = np.arange(36, dtype=np.int32).reshape(12, 3)
    del local
    sub = tensor.sub_tensor([2, 1], [5, 3])
    assert sub.shape == (3, 2) and sub.storage_offset() == 2 * 4 + 1
    out = np.empty((2, 2), np.int32)
    sub.gather(np.array([0, 2], np.int64), out)
    assert out.tolist() == [[7, 8], [13, 14]]
    sub.destroy()
    tensor.destroy()


def test_stream():
    stream = memloom.Stream()
    assert stream.handle != 0
    stream.synchronize()
    stream.destroy()
    with pytest.raises(RuntimeError, match="destroyed"):
        stream.synchronize()
