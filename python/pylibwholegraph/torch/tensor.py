"""WholeMemory tensors for torch (upstream's pylibwholegraph/torch/tensor.py API): CPU torch
tensors on the emulated backend, CUDA tensors where the memory is on a GPU; views are zero-copy
(DLPack)."""

import gc
import os
import warnings
from typing import List, Union

import torch
import torch.utils.dlpack

from memloom import wholememory as _wm
from .comm import WholeMemoryCommunicator
from .utils import (
    get_file_size,
    get_part_file_list,
    get_part_file_name,
    str_to_wmb_wholememory_location,
    str_to_wmb_wholememory_memory_type,
    torch_dtype_to_wholememory_dtype,
    wholememory_dtype_to_torch_dtype,
)

WholeMemoryMemoryType = _wm.MemoryType
WholeMemoryMemoryLocation = _wm.MemoryLocation

_CUDA_DLPACK_DEVICE = 2


def _to_torch(view, host_view: bool):
    if host_view and view.__dlpack_device__()[0] == _CUDA_DLPACK_DEVICE:
        raise ValueError("the memory is on a GPU and not mapped for the host: no host view")
    return torch.utils.dlpack.from_dlpack(view)


class WholeMemoryTensor(object):
    """A tensor whose entries (rows) are spread over the ranks of a communicator."""

    def __init__(self, wmb_tensor):
        self.wmb_tensor = wmb_tensor
        self._device = None

    @property
    def dtype(self):
        return wholememory_dtype_to_torch_dtype(self.wmb_tensor.dtype)

    def dim(self):
        return self.wmb_tensor.dim()

    @property
    def shape(self):
        return torch.Size(self.wmb_tensor.shape)

    def stride(self):
        return self.wmb_tensor.stride()

    def storage_offset(self):
        return self.wmb_tensor.storage_offset()

    def get_comm(self):
        return WholeMemoryCommunicator(self.wmb_tensor.comm)

    def _compute_device(self):
        # Where gathered rows land: the device of this rank's memory (CPU on emulated).
        if self._device is None:
            kind, index = self.wmb_tensor.local_view().__dlpack_device__()
            if kind == _CUDA_DLPACK_DEVICE:
                self._device = torch.device("cuda", torch.cuda.current_device())
            else:
                self._device = torch.device("cpu")
        return self._device

    def gather(self, indice: torch.Tensor, *, force_dtype: Union[torch.dtype, None] = None):
        if indice.dim() != 1:
            raise ValueError("indice must be 1-D")
        columns = self.shape[1] if self.dim() == 2 else 1
        device = self._compute_device()
        output = torch.empty([indice.shape[0], columns], device=device,
                             dtype=force_dtype if force_dtype is not None else self.dtype)
        if self.dim() == 1:
            self.wmb_tensor.gather(indice.to(device), output.view(-1))
            return output.view(-1)
        self.wmb_tensor.gather(indice.to(device), output)
        return output

    def scatter(self, input_tensor: torch.Tensor, indice: torch.Tensor):
        if indice.dim() != 1:
            raise ValueError("indice must be 1-D")
        if input_tensor.dim() != self.dim() or input_tensor.shape[0] != indice.shape[0]:
            raise ValueError(f"input_tensor of shape {tuple(input_tensor.shape)} does not match "
                             f"{indice.shape[0]} indices into a {self.dim()}-D tensor")
        if self.dim() == 2 and input_tensor.shape[1] != self.shape[1]:
            raise ValueError(f"input_tensor has {input_tensor.shape[1]} columns, the tensor "
                             f"{self.shape[1]}")
        device = self._compute_device()
        self.wmb_tensor.scatter(input_tensor.to(device).contiguous(), indice.to(device))

    def get_sub_tensor(self, starts, ends):
        return WholeMemoryTensor(self.wmb_tensor.sub_tensor(list(starts), list(ends)))

    def get_local_tensor(self, host_view: bool = False):
        """(this rank's entries as a torch tensor, the index of its first entry)."""
        return (_to_torch(self.wmb_tensor.local_view(), host_view),
                self.wmb_tensor.local_entry_start)

    def get_global_tensor(self, host_view: bool = False):
        """(the whole tensor as one torch tensor, 0): CONTINUOUS memory (or HIERARCHY on one
        node) only."""
        return _to_torch(self.wmb_tensor.global_view(), host_view), 0

    def get_all_chunked_tensor(self, host_view: bool = False):
        """([every rank's entries as a torch tensor], [their first entries' indices])."""
        views, starts = self.wmb_tensor.rank_views()
        return [_to_torch(view, host_view) for view in views], list(starts)

    def from_filelist(self, filelist: Union[List[str], str], round_robin_size: int = 0,
                      file_format: str = "binary"):
        """Collective: loads the files (the rows of all of them, in order)."""
        files = _normalize_filelist(filelist)
        _require_binary(file_format)
        self.wmb_tensor.load_from_file(files, round_robin_size)

    def from_file_prefix(self, file_prefix: str, part_count: Union[int, None] = None):
        if part_count is None:
            part_count = self.get_comm().get_size()
        self.from_filelist(get_part_file_list(file_prefix, part_count))

    def local_to_file(self, filename: str):
        """Collective: each rank writes its own entries to its own file."""
        self.wmb_tensor.store_to_file(os.fspath(filename))

    def to_file_prefix(self, file_prefix: str):
        comm = self.get_comm()
        self.local_to_file(get_part_file_name(file_prefix, comm.get_rank(), comm.get_size()))


def _normalize_filelist(filelist):
    if isinstance(filelist, (str, os.PathLike)):
        files = [os.fspath(filelist)]
    else:
        files = [os.fspath(name) for name in filelist]
    if not files:
        raise ValueError("filelist must contain at least one file")
    return files


def _require_binary(file_format):
    if not isinstance(file_format, str) or file_format.lower() not in ("binary", "bin", "raw"):
        raise ValueError(f"file_format {file_format!r} is not supported by memloom's "
                         "pylibwholegraph (binary files only; parquet needs pyarrow, not "
                         "packaged)")


def create_wholememory_tensor(comm: WholeMemoryCommunicator, memory_type: str,
                              memory_location: str, sizes: List[int], dtype: torch.dtype,
                              strides: List[int], tensor_entry_partition: Union[List[int], None] = None):
    """Collective: an empty 1-D or 2-D WholeMemory tensor."""
    dim = len(sizes)
    if dim < 1 or dim > 2:
        raise ValueError("Only dim 1 or 2 is supported now.")
    if strides is None:
        strides = [sizes[1], 1] if dim == 2 else [1]
    elif len(strides) != dim or strides[-1] != 1 or (dim == 2 and strides[0] < sizes[1]):
        raise ValueError(f"strides {list(strides)} do not fit sizes {list(sizes)}")
    return WholeMemoryTensor(_wm._create_tensor(
        comm.wmb_comm, [int(s) for s in sizes], torch_dtype_to_wholememory_dtype(dtype),
        str_to_wmb_wholememory_memory_type(memory_type),
        str_to_wmb_wholememory_location(memory_location), [int(s) for s in strides],
        tensor_entry_partition))


def create_wholememory_tensor_from_filelist(
        comm: WholeMemoryCommunicator, memory_type: str, memory_location: str,
        filelist: Union[List[str], str], dtype: torch.dtype,
        last_dim_size: Union[int, None] = None, last_dim_strides: int = -1,
        tensor_entry_partition: Union[List[int], None] = None, file_format: str = "binary",
        expected_entry_count: Union[int, None] = None,
        expected_shape: Union[List[int], tuple, None] = None,
        fail_on_dtype_mismatch: bool = False):
    """Collective: a WholeMemory tensor holding the rows of binary files (last_dim_size 0: 1-D)."""
    files = _normalize_filelist(filelist)
    _require_binary(file_format)
    if last_dim_size is None:
        if expected_shape is None:
            raise ValueError("last_dim_size is required for binary file loading")
        last_dim_size = 0 if len(expected_shape) == 1 else int(expected_shape[1])
    if last_dim_size < 0:
        raise ValueError("last_dim_size must be non-negative")
    element = torch.tensor([], dtype=dtype).element_size()
    entry_bytes = element * max(last_dim_size, 1)
    rows = 0
    for name in files:
        size = get_file_size(name)
        if size % entry_bytes != 0:
            raise ValueError("File %s size is %d not multiple of %d" % (name, size, entry_bytes))
        rows += size // entry_bytes
    sizes = [rows] if last_dim_size == 0 else [rows, last_dim_size]
    if expected_entry_count is not None and rows != expected_entry_count:
        raise ValueError(f"Files contain {rows} entries, but expected_entry_count is "
                         f"{expected_entry_count}")
    if expected_shape is not None and tuple(expected_shape) != tuple(sizes):
        raise ValueError(f"Files contain a tensor with shape {tuple(sizes)}, but expected_shape "
                         f"is {tuple(expected_shape)}")
    if last_dim_size == 0:
        strides = [1]
    else:
        strides = [last_dim_strides if last_dim_strides != -1 else last_dim_size, 1]
    tensor = create_wholememory_tensor(comm, memory_type, memory_location, sizes, dtype, strides,
                                       tensor_entry_partition)
    tensor.from_filelist(files)
    return tensor


def destroy_wholememory_tensor(wm_tensor: WholeMemoryTensor):
    """Collective: frees the tensor. torch tensors still viewing it must not be used after."""
    if wm_tensor is None or wm_tensor.wmb_tensor is None:
        return
    gc.collect()  # views only referenced from reference cycles go first
    if wm_tensor.wmb_tensor.live_views > 0:
        warnings.warn("destroy_wholememory_tensor: torch tensors viewing this WholeMemory tensor "
                      "are still alive; their memory is freed now", RuntimeWarning, stacklevel=2)
    wm_tensor.wmb_tensor.destroy(force=True)
    wm_tensor.wmb_tensor = None
