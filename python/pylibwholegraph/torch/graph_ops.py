"""Operations on sampled sub-graphs (upstream's pylibwholegraph/torch/graph_ops.py API):
append_unique in torch on whatever device the tensors are on, add_csr_self_loop through the C
API's csr_add_self_loop (graph_op.h) on the backend's device."""

import torch
from _memloom_native import wholememory as _native


def append_unique(target_node_tensor: torch.Tensor, neighbor_node_tensor: torch.Tensor,
                  need_neighbor_raw_to_unique: bool = False):
    """target_node_tensor followed by the neighbours not among them, each once. Returns that
    tensor, and with need_neighbor_raw_to_unique each neighbour's position in it (int32).

    The targets must be distinct (as upstream assumes: they are the previous layer's unique
    nodes); they keep their positions. New nodes come in order of first appearance (upstream's
    order is unspecified). Neighbours are taken in the targets' dtype."""
    for name, tensor in (("target_node_tensor", target_node_tensor),
                         ("neighbor_node_tensor", neighbor_node_tensor)):
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, not {type(tensor).__name__}")
        if tensor.dim() != 1:
            raise ValueError(f"{name} must be 1-D, got {tensor.dim()}-D")
        if tensor.dtype not in (torch.int32, torch.int64):
            raise TypeError(f"{name} has dtype {tensor.dtype}; it must be int32 or int64")
    targets = target_node_tensor
    combined = torch.cat([targets, neighbor_node_tensor.to(targets.device, targets.dtype)])
    values, inverse = torch.unique(combined, return_inverse=True)
    # Each unique value's first position: the head of its group in a stable sort of inverse.
    counts = torch.bincount(inverse, minlength=values.shape[0])
    _, by_value = torch.sort(inverse, stable=True)
    first = by_value[torch.cumsum(counts, 0) - counts]
    order = torch.argsort(first)
    unique_nodes = values[order]
    if not torch.equal(unique_nodes[:targets.shape[0]], targets):
        raise ValueError("target_node_tensor has repeated nodes; append_unique needs distinct "
                         "targets")
    if not need_neighbor_raw_to_unique:
        return unique_nodes
    slot_of_value = torch.empty_like(order)
    slot_of_value[order] = torch.arange(order.shape[0], device=order.device)
    mapping = slot_of_value[inverse[targets.shape[0]:]].to(torch.int32)
    return unique_nodes, mapping


def add_csr_self_loop(csr_row_ptr_tensor: torch.Tensor, csr_col_ptr_tensor: torch.Tensor):
    """The CSR graph with a self loop added to every row, first in the row (as upstream, existing
    self loops are not looked for). Returns (row pointers, columns): int32 tensors on the input's
    device, of rows + 1 and edges + rows entries. The C call runs on the backend's device, so the
    tensors must be memory it reaches (CUDA tensors on the cuda backend)."""
    for name, tensor in (("csr_row_ptr_tensor", csr_row_ptr_tensor),
                         ("csr_col_ptr_tensor", csr_col_ptr_tensor)):
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, not {type(tensor).__name__}")
        if tensor.dim() != 1:
            raise ValueError(f"{name} must be 1-D, got {tensor.dim()}-D")
        if tensor.dtype != torch.int32:
            raise TypeError(f"{name} has dtype {tensor.dtype}; csr_add_self_loop takes int32")
    if csr_row_ptr_tensor.shape[0] < 1:
        raise ValueError("csr_row_ptr_tensor needs rows + 1 entries")
    rows = csr_row_ptr_tensor.shape[0] - 1
    row_ptr = csr_row_ptr_tensor.contiguous()
    col = csr_col_ptr_tensor.contiguous()
    output_row_ptr = torch.empty_like(row_ptr)
    output_col = torch.empty(col.shape[0] + rows, dtype=torch.int32, device=col.device)
    _native.csr_add_self_loop(row_ptr, col, output_row_ptr, output_col)
    return output_row_ptr, output_col
