"""Conversions between pylibwholegraph's strings / torch dtypes and memloom's enums."""

import os

import torch

from memloom import wholememory as _wm

_MEMORY_TYPES = {
    "continuous": _wm.MemoryType.CONTINUOUS,
    "chunked": _wm.MemoryType.CHUNKED,
    "distributed": _wm.MemoryType.DISTRIBUTED,
    "hierarchy": _wm.MemoryType.HIERARCHY,
}
_LOCATIONS = {"cpu": _wm.MemoryLocation.HOST, "cuda": _wm.MemoryLocation.DEVICE}
_BACKENDS = {"nccl": _wm.DistributedBackend.NCCL, "nvshmem": _wm.DistributedBackend.NVSHMEM}
_LOG_LEVELS = {
    "fatal": _wm.LogLevel.FATAL,
    "error": _wm.LogLevel.ERROR,
    "warn": _wm.LogLevel.WARN,
    "info": _wm.LogLevel.INFO,
    "debug": _wm.LogLevel.DEBUG,
    "trace": _wm.LogLevel.TRACE,
}
_TORCH_TO_WM = {
    torch.float32: _wm.DType.FLOAT,
    torch.float16: _wm.DType.HALF,
    torch.float64: _wm.DType.DOUBLE,
    torch.bfloat16: _wm.DType.BF16,
    torch.int32: _wm.DType.INT,
    torch.int64: _wm.DType.INT64,
    torch.int16: _wm.DType.INT16,
    torch.int8: _wm.DType.INT8,
}
_WM_TO_TORCH = {value: key for key, value in _TORCH_TO_WM.items()}


def _lookup(table, key, what):
    try:
        return table[key]
    except (KeyError, TypeError):
        names = sorted(str(name) for name in table)
        raise ValueError(f"{what} must be one of {names}, not {key!r}") from None


def str_to_wmb_wholememory_memory_type(name: str):
    return _lookup(_MEMORY_TYPES, name, "memory_type")


def str_to_wmb_wholememory_location(name: str):
    return _lookup(_LOCATIONS, name, "memory_location")


def str_to_wmb_wholememory_distributed_backend_type(name: str):
    return _lookup(_BACKENDS, name, "distributed_backend")


def wholememory_distributed_backend_type_to_str(backend) -> str:
    for name, value in _BACKENDS.items():
        if value == backend:
            return name
    return "none"


def str_to_wmb_wholememory_log_level(name: str):
    return _lookup(_LOG_LEVELS, name, "log level")


def torch_dtype_to_wholememory_dtype(dtype):
    return _lookup(_TORCH_TO_WM, dtype, "dtype")


def wholememory_dtype_to_torch_dtype(dtype):
    return _lookup(_WM_TO_TORCH, dtype, "dtype")


def get_file_size(filename: str) -> int:
    return os.path.getsize(filename)


def get_part_file_name(prefix: str, part_id: int, part_count: int) -> str:
    return "%s_part_%d_of_%d" % (prefix, part_id, part_count)


def get_part_file_list(prefix: str, part_count: int):
    return [get_part_file_name(prefix, part, part_count) for part in range(part_count)]
