"""Neighbour sampling on a CSR graph held in WholeMemory tensors (upstream's
pylibwholegraph/torch/wholegraph_ops.py API). The outputs are torch tensors on the graph's
compute device (CPU on the emulated backend, the current GPU where the graph's memory is on
one): the native call allocates them through a torch allocator, so the sampling kernel writes
them where it runs. Random numbers come from memloom's counter-based generator keyed by
(seed, centre node, position): a seed gives the same samples on every rank and memory type."""

import random
from typing import Union

import torch

from _memloom_native import wholememory as _native
from .tensor import WholeMemoryTensor
from .utils import wholememory_dtype_to_torch_dtype

_SEED_LIMIT = 1 << 64


def _check_graph_array(wmb_tensor, name, dtypes):
    if not isinstance(wmb_tensor, _native.Tensor):
        raise TypeError(f"{name} must be a WholeMemory tensor (WholeMemoryTensor.wmb_tensor), "
                        f"not {type(wmb_tensor).__name__}")
    if wmb_tensor.dim() != 1:
        raise ValueError(f"{name} must be 1-D, got {wmb_tensor.dim()}-D")
    dtype = wholememory_dtype_to_torch_dtype(wmb_tensor.dtype)
    if dtype not in dtypes:
        raise TypeError(f"{name} has dtype {dtype}; it must be one of {list(dtypes)}")


def _check_centers(center_nodes_tensor):
    if not isinstance(center_nodes_tensor, torch.Tensor):
        raise TypeError("center_nodes_tensor must be a torch.Tensor, not "
                        f"{type(center_nodes_tensor).__name__}")
    if center_nodes_tensor.dim() != 1:
        raise ValueError(f"center_nodes_tensor must be 1-D, got {center_nodes_tensor.dim()}-D "
                         f"of shape {tuple(center_nodes_tensor.shape)}")
    if center_nodes_tensor.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"center_nodes_tensor has dtype {center_nodes_tensor.dtype}; it must be "
                        "torch.int32 or torch.int64")


def _check_seed(random_seed):
    if random_seed is None:
        return random.getrandbits(64)
    if isinstance(random_seed, bool) or not isinstance(random_seed, int):
        raise TypeError(f"random_seed must be an int or None, not {type(random_seed).__name__}")
    if not 0 <= random_seed < _SEED_LIMIT:
        raise ValueError(f"random_seed {random_seed} is outside [0, 2^64)")
    return random_seed


def _sample(wm_csr_row_ptr_tensor, wm_csr_col_ptr_tensor, wm_csr_weight_ptr_tensor,
            center_nodes_tensor, max_sample_count, random_seed, need_center_local_output,
            need_edge_output):
    _check_graph_array(wm_csr_row_ptr_tensor, "wm_csr_row_ptr_tensor", (torch.int64,))
    _check_graph_array(wm_csr_col_ptr_tensor, "wm_csr_col_ptr_tensor",
                       (torch.int32, torch.int64))
    if wm_csr_weight_ptr_tensor is not None:
        _check_graph_array(wm_csr_weight_ptr_tensor, "wm_csr_weight_ptr_tensor",
                           (torch.float32, torch.float64))
        if wm_csr_weight_ptr_tensor.shape[0] != wm_csr_col_ptr_tensor.shape[0]:
            raise ValueError(f"wm_csr_weight_ptr_tensor has {wm_csr_weight_ptr_tensor.shape[0]} "
                             f"weights for {wm_csr_col_ptr_tensor.shape[0]} edges")
    _check_centers(center_nodes_tensor)
    if isinstance(max_sample_count, bool) or not isinstance(max_sample_count, int):
        raise TypeError(f"max_sample_count must be an int, not {type(max_sample_count).__name__}")
    seed = _check_seed(random_seed)
    device = WholeMemoryTensor(wm_csr_row_ptr_tensor)._compute_device()
    centers = center_nodes_tensor.to(device).contiguous()
    offsets = torch.empty(centers.shape[0] + 1, dtype=torch.int32, device=device)

    def allocate(count, dtype):
        return torch.empty(count, dtype=wholememory_dtype_to_torch_dtype(dtype), device=device)

    nodes, center_localid, edge_gid = _native.csr_sample_without_replacement(
        wm_csr_row_ptr_tensor, wm_csr_col_ptr_tensor, wm_csr_weight_ptr_tensor, centers,
        max_sample_count, seed, offsets, allocate, need_center_local_output, need_edge_output)
    outputs = [offsets, nodes]
    if need_center_local_output:
        outputs.append(center_localid)
    if need_edge_output:
        outputs.append(edge_gid)
    return tuple(outputs)


def unweighted_sample_without_replacement(
        wm_csr_row_ptr_tensor, wm_csr_col_ptr_tensor, center_nodes_tensor: torch.Tensor,
        max_sample_count: int, random_seed: Union[int, None] = None,
        need_center_local_output: bool = False, need_edge_output: bool = False):
    """min(max_sample_count, degree) distinct neighbours of each centre (all of them when
    max_sample_count <= 0). Returns (sample offsets (int32, centres + 1), sampled nodes
    [, each sample's centre position (int32)][, each sample's edge id (int64)])."""
    return _sample(wm_csr_row_ptr_tensor, wm_csr_col_ptr_tensor, None, center_nodes_tensor,
                   max_sample_count, random_seed, need_center_local_output, need_edge_output)


def weighted_sample_without_replacement(
        wm_csr_row_ptr_tensor, wm_csr_col_ptr_tensor, wm_csr_weight_ptr_tensor,
        center_nodes_tensor: torch.Tensor, max_sample_count: int,
        random_seed: Union[int, None] = None, need_center_local_output: bool = False,
        need_edge_output: bool = False):
    """As unweighted_sample_without_replacement, drawing each centre's neighbours without
    replacement with probabilities proportional to the edge weights."""
    if wm_csr_weight_ptr_tensor is None:
        raise ValueError("wm_csr_weight_ptr_tensor is None: use unweighted sampling")
    return _sample(wm_csr_row_ptr_tensor, wm_csr_col_ptr_tensor, wm_csr_weight_ptr_tensor,
                   center_nodes_tensor, max_sample_count, random_seed, need_center_local_output,
                   need_edge_output)
