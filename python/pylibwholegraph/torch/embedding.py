"""WholeMemory embeddings for torch (upstream's pylibwholegraph/torch/embedding.py API) over
memloom's C API: tables of learnable rows, sparse optimizers that update only the rows a batch
touched, and cache policies. Gradients reach the table through autograd: the module's backward
records (indices, gradient rows) and the optimizer's step(lr) applies them (collective)."""

from typing import List, Union

import torch

from _memloom_native import wholememory as _native
from .comm import WholeMemoryCommunicator
from .tensor import WholeMemoryTensor, _normalize_filelist
from .utils import (
    str_to_wmb_wholememory_location,
    str_to_wmb_wholememory_memory_type,
    torch_dtype_to_wholememory_dtype,
)

_OPTIMIZERS = {
    "sgd": _native.OptimizerType.OptSgd,
    "adam": _native.OptimizerType.OptLazyAdam,
    "rmsprop": _native.OptimizerType.OptRmsProp,
    "adagrad": _native.OptimizerType.OptAdaGrad,
}
_ACCESS = {
    "none": _native.AccessType.AtNone,
    "readonly": _native.AccessType.AtReadOnly,
    "readwrite": _native.AccessType.AtReadWrite,
}


def _lookup(table, key, what):
    if key not in table:
        raise ValueError(f"unknown {what} {key!r}; one of {sorted(table)}")
    return table[key]


class WholeMemoryOptimizer(object):
    """A sparse optimizer: its parameters apply to every embedding it is given."""

    def __init__(self, optimizer_type: str, param_dict: dict):
        self.optimizer_type = optimizer_type
        self.wmb_opt = _native.create_embedding_optimizer(
            _lookup(_OPTIMIZERS, optimizer_type, "optimizer type"))
        for name, value in param_dict.items():
            self.wmb_opt.set_parameter(name, float(value))
        self.embeddings = []

    def add_embedding(self, wm_embedding):
        wm_embedding.wmb_embedding.set_optimizer(self.wmb_opt)
        wm_embedding.wm_optimizer = self
        self.embeddings.append(wm_embedding)

    def step(self, lr: float):
        """Collective: applies every recorded gradient of every embedding."""
        for embedding in self.embeddings:
            embedding.apply_gradients(lr)


def create_wholememory_optimizer(optimizer_type: str, param_dict: dict):
    """optimizer_type: "sgd", "adam" (lazy Adam), "rmsprop" or "adagrad"."""
    return WholeMemoryOptimizer(optimizer_type, param_dict)


class WholeMemoryCachePolicy(object):
    def __init__(self, wmb_cache_policy):
        self.wmb_cache_policy = wmb_cache_policy


def create_wholememory_cache_policy(cache_comm: WholeMemoryCommunicator, *,
                                    memory_type: str = "chunked", memory_location: str = "cuda",
                                    access_type: str = "readonly", ratio: float = 0.5):
    return WholeMemoryCachePolicy(_native.create_embedding_cache_policy(
        cache_comm.wmb_comm, str_to_wmb_wholememory_memory_type(memory_type),
        str_to_wmb_wholememory_location(memory_location), _lookup(_ACCESS, access_type,
                                                                  "access type"), float(ratio)))


def create_builtin_cache_policy(builtin_cache_type: str, embedding_memory_type: str,
                                embedding_memory_location: str, access_type: str,
                                cache_ratio: float, cache_memory_type: str = "",
                                cache_memory_location: str = ""):
    """builtin_cache_type "none" gives None; "local_device" and "local_node" cache on this
    rank's device / node communicator (as upstream)."""
    from .comm import get_local_device_communicator, get_local_node_communicator
    if builtin_cache_type == "none":
        return None
    if builtin_cache_type == "local_device":
        comm = get_local_device_communicator()
        memory_type = cache_memory_type or "continuous"
        location = cache_memory_location or "cuda"
    elif builtin_cache_type == "local_node":
        comm = get_local_node_communicator()
        memory_type = cache_memory_type or embedding_memory_type
        location = cache_memory_location or embedding_memory_location
    else:
        raise ValueError(f"unknown builtin cache type {builtin_cache_type!r}; one of "
                         "'none', 'local_device', 'local_node'")
    return create_wholememory_cache_policy(comm, memory_type=memory_type,
                                           memory_location=location, access_type=access_type,
                                           ratio=cache_ratio)


class WholeMemoryEmbedding(object):
    def __init__(self, wmb_embedding, cache_policy=None):
        self.wmb_embedding = wmb_embedding
        self.wmb_cache_policy = cache_policy
        self.wm_optimizer = None
        self.sparse_indices: List[torch.Tensor] = []
        self.sparse_grads: List[torch.Tensor] = []
        self._table = WholeMemoryTensor(wmb_embedding.get_embedding_tensor())

    def need_grad(self) -> bool:
        return self.wm_optimizer is not None

    def get_embedding_tensor(self) -> WholeMemoryTensor:
        return self._table

    @property
    def shape(self):
        return self._table.shape

    @property
    def dtype(self):
        return self._table.dtype

    def gather(self, indice: torch.Tensor, *, is_training: bool = False,
               force_dtype: Union[torch.dtype, None] = None):
        if indice.dim() != 1:
            raise ValueError("indice must be 1-D")
        # Rows land where the table's memory is computed on (the GPU of a cuda-backend rank, as
        # upstream's; the CPU on emulated): a GPU cannot write pageable host memory.
        device = self._table._compute_device()
        output = torch.empty([indice.shape[0], self.shape[1]], device=device,
                             dtype=force_dtype if force_dtype is not None else self.dtype)
        self.wmb_embedding.gather(indice.to(device).contiguous(), output, is_training)
        return output

    def add_gradients(self, indice: torch.Tensor, grad_outputs: torch.Tensor):
        self.sparse_indices.append(indice.detach())
        self.sparse_grads.append(grad_outputs.detach())

    def apply_gradients(self, lr: float):
        """Collective: every rank calls it, with or without recorded gradients."""
        if self.sparse_indices:
            indices = torch.cat(self.sparse_indices)
            grads = torch.cat(self.sparse_grads)
        else:
            indices = torch.empty([0], dtype=torch.int64)
            grads = torch.empty([0, self.shape[1]], dtype=torch.float32)
        self.sparse_indices, self.sparse_grads = [], []
        device = self._table._compute_device()
        self.wmb_embedding.gradient_apply(indices.to(device).contiguous(),
                                          grads.to(device, torch.float32).contiguous(), True,
                                          float(lr))

    def writeback_all_cache(self):
        self.wmb_embedding.writeback_cache()

    def drop_all_cache(self):
        self.wmb_embedding.drop_all_cache()

    def get_optimizer_state_names(self):
        return self.wmb_embedding.optimizer_state_names()

    def get_optimizer_state(self, state_name):
        return WholeMemoryTensor(self.wmb_embedding.optimizer_state(state_name))


def create_embedding(comm: WholeMemoryCommunicator, memory_type: str, memory_location: str,
                     dtype: torch.dtype, sizes: List[int], *, optimizer=None, cache_policy=None,
                     random_init: bool = False, gather_sms: int = -1, round_robin_size: int = 0,
                     embedding_entry_partition: Union[List[int], None] = None):
    """Collective: a [rows, dim] embedding table (zeros, or uniform in [-1/sqrt(dim), 1/sqrt(dim))
    with random_init)."""
    if len(sizes) != 2:
        raise ValueError("an embedding's sizes must be [rows, dim]")
    wmb = _native.create_embedding(
        comm.wmb_comm, [int(s) for s in sizes], torch_dtype_to_wholememory_dtype(dtype),
        str_to_wmb_wholememory_memory_type(memory_type),
        str_to_wmb_wholememory_location(memory_location),
        cache_policy.wmb_cache_policy if cache_policy is not None else None,
        embedding_entry_partition, gather_sms, round_robin_size)
    embedding = WholeMemoryEmbedding(wmb, cache_policy)
    try:
        # The rank's own rows where they live (a CUDA tensor for GPU memory), filled there: GPU
        # memory need not be mapped for the host.
        local, _ = embedding.get_embedding_tensor().get_local_tensor()
        if random_init:
            scale = 1.0 / float(sizes[1]) ** 0.5
            local.copy_(torch.rand(local.shape, dtype=torch.float32, device=local.device) * 2 *
                        scale - scale)
        else:
            local.zero_()
        del local
        comm.barrier()
    except BaseException:
        wmb.destroy()
        raise
    if optimizer is not None:
        optimizer.add_embedding(embedding)
    return embedding


def create_embedding_from_filelist(comm: WholeMemoryCommunicator, memory_type: str,
                                   memory_location: str, filelist, dtype: torch.dtype,
                                   last_dim_size: int, *, optimizer=None, cache_policy=None,
                                   gather_sms: int = -1, round_robin_size: int = 0):
    """Collective: an embedding of binary files of packed [*, last_dim_size] rows."""
    import os
    files = _normalize_filelist(filelist)
    row_bytes = last_dim_size * torch.tensor([], dtype=dtype).element_size()
    total = sum(os.path.getsize(f) for f in files)
    if total % row_bytes != 0:
        raise ValueError(f"the files hold {total} bytes, not a whole number of {row_bytes}-byte rows")
    embedding = create_embedding(comm, memory_type, memory_location, dtype,
                                 [total // row_bytes, last_dim_size], optimizer=optimizer,
                                 cache_policy=cache_policy, gather_sms=gather_sms,
                                 round_robin_size=round_robin_size)
    embedding.get_embedding_tensor().wmb_tensor.load_from_file(files, round_robin_size)
    return embedding


def destroy_embedding(wm_embedding: WholeMemoryEmbedding):
    """Collective."""
    wm_embedding.wmb_embedding.destroy()


class _EmbeddingLookup(torch.autograd.Function):
    @staticmethod
    def forward(ctx, indice, dummy, embedding, force_dtype):
        ctx.embedding = embedding
        ctx.save_for_backward(indice)
        return embedding.gather(indice, is_training=True, force_dtype=force_dtype)

    @staticmethod
    def backward(ctx, grad_outputs):
        (indice,) = ctx.saved_tensors
        ctx.embedding.add_gradients(indice, grad_outputs)
        return None, None, None, None


class WholeMemoryEmbeddingModule(torch.nn.Module):
    """forward(indice) gathers rows; when the embedding has an optimizer, backward records the
    rows' gradients for its step(lr)."""

    def __init__(self, wm_embedding: WholeMemoryEmbedding):
        super().__init__()
        self.wm_embedding = wm_embedding
        # A parameter so autograd reaches backward; it takes no gradient itself.
        self.dummy_input = torch.nn.Parameter(torch.zeros(1), requires_grad=False)

    def forward(self, indice: torch.Tensor, force_dtype: Union[torch.dtype, None] = None):
        if self.training and self.wm_embedding.need_grad():
            return _EmbeddingLookup.apply(indice, self.dummy_input.detach().requires_grad_(),
                                          self.wm_embedding, force_dtype)
        return self.wm_embedding.gather(indice, force_dtype=force_dtype)
