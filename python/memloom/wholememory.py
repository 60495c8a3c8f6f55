"""WholeMemory from Python: communicators, tensors of every memory type and location, zero-copy
views (numpy arrays via __array_interface__, DLPack capsules for torch and anything else), gather
and scatter with numpy or torch index arrays, and file load/store.

Every call that waits on other ranks releases the GIL, and a Ctrl-C during it raises
KeyboardInterrupt within 0.1 s. Failures raise WholeMemoryError (a RuntimeError) with memloom's
message and the C error code in .code / .code_name.
"""

import numpy as _np

from _memloom_native.wholememory import (
    Communicator,
    DistributedBackend,
    DType,
    LogLevel,
    MemoryLocation,
    MemoryType,
    Tensor,
    TensorView,
    WholeMemoryError,
    create_communicator,
    create_unique_id,
    equal_entry_partition_plan,
    finalize,
    fork_get_device_count,
    init,
)
from _memloom_native.wholememory import create_tensor as _create_tensor

__all__ = [
    "Communicator", "DistributedBackend", "DType", "LogLevel", "MemoryLocation", "MemoryType",
    "Tensor", "TensorView", "WholeMemoryError", "create_communicator", "create_tensor",
    "create_unique_id", "dtype_of", "equal_entry_partition_plan", "finalize",
    "fork_get_device_count", "gather", "init", "numpy_dtype_of", "scatter",
]

_NUMPY_TO_DTYPE = {
    _np.dtype(_np.float32): DType.FLOAT,
    _np.dtype(_np.float16): DType.HALF,
    _np.dtype(_np.float64): DType.DOUBLE,
    _np.dtype(_np.int32): DType.INT,
    _np.dtype(_np.int64): DType.INT64,
    _np.dtype(_np.int16): DType.INT16,
    _np.dtype(_np.int8): DType.INT8,
}
_DTYPE_TO_NUMPY = {value: key for key, value in _NUMPY_TO_DTYPE.items()}


def dtype_of(dtype):
    """A DType from a DType, a numpy dtype (or anything numpy.dtype accepts)."""
    if isinstance(dtype, DType):
        return dtype
    try:
        return _NUMPY_TO_DTYPE[_np.dtype(dtype)]
    except (KeyError, TypeError):
        raise TypeError(f"no WholeMemory dtype for {dtype!r}") from None


def numpy_dtype_of(dtype):
    """The numpy dtype of a DType (bfloat16 has none)."""
    try:
        return _DTYPE_TO_NUMPY[dtype]
    except KeyError:
        raise TypeError(f"{dtype} has no numpy dtype") from None


def create_tensor(comm, shape, dtype, memory_type=MemoryType.CONTINUOUS,
                  memory_location=MemoryLocation.HOST, strides=None, entry_partition=None):
    """Collective over comm: a 1-D or 2-D tensor whose entries (rows) are spread over its ranks."""
    if not isinstance(comm, Communicator):
        raise TypeError(f"comm must be a Communicator, not {type(comm).__name__}")
    return _create_tensor(comm, [int(s) for s in shape], dtype_of(dtype), memory_type,
                          memory_location, strides, entry_partition)


def gather(tensor, indices, output=None):
    """tensor[indices] into output (a new numpy array when None), which is returned."""
    if output is None:
        rows = len(indices)
        shape = (rows,) if tensor.dim() == 1 else (rows, tensor.shape[1])
        output = _np.empty(shape, dtype=numpy_dtype_of(tensor.dtype))
    tensor.gather(indices, output)
    return output


def scatter(tensor, values, indices):
    """tensor[indices] = values."""
    tensor.scatter(values, indices)
