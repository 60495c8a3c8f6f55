"""GraphStructure (upstream's pylibwholegraph/torch/graph_structure.py API): one relation's graph
as a CSR of WholeMemory tensors, with node and edge attributes, and neighbour sampling over it.

The CSR tensors must be mapped in full by every rank that samples: CONTINUOUS or CHUNKED over a
communicator of one node (on several nodes, each node holds its own copy over its local node
communicator). Sampling is local to the calling rank: no collective is involved."""

from typing import List, Union

import torch

from . import graph_ops, wholegraph_ops
from .tensor import WholeMemoryTensor


def _check_wholememory_tensor(tensor, name):
    if not isinstance(tensor, WholeMemoryTensor):
        raise TypeError(f"{name} must be a WholeMemoryTensor, not {type(tensor).__name__}")


class GraphStructure(object):
    """The CSR of a graph (csr_row_ptr: int64, nodes + 1 entries; csr_col_ind: int32 or int64,
    one entry per edge) and attributes by name: node attributes have a row per node, edge
    attributes (such as weights for weighted sampling) a row per edge."""

    def __init__(self):
        super().__init__()
        self.node_count = 0
        self.edge_count = 0
        self.csr_row_ptr = None
        self.csr_col_ind = None
        self.node_attributes = {}
        self.edge_attributes = {}

    def set_csr_graph(self, csr_row_ptr: WholeMemoryTensor, csr_col_ind: WholeMemoryTensor):
        _check_wholememory_tensor(csr_row_ptr, "csr_row_ptr")
        _check_wholememory_tensor(csr_col_ind, "csr_col_ind")
        if csr_row_ptr.dim() != 1 or csr_col_ind.dim() != 1:
            raise ValueError(f"csr_row_ptr and csr_col_ind must be 1-D, got "
                             f"{csr_row_ptr.dim()}-D and {csr_col_ind.dim()}-D")
        if csr_row_ptr.dtype != torch.int64:
            raise TypeError(f"csr_row_ptr has dtype {csr_row_ptr.dtype}; it must be torch.int64")
        if csr_col_ind.dtype not in (torch.int32, torch.int64):
            raise TypeError(f"csr_col_ind has dtype {csr_col_ind.dtype}; it must be torch.int32 "
                            "or torch.int64")
        if csr_row_ptr.shape[0] < 2:
            raise ValueError(f"csr_row_ptr has {csr_row_ptr.shape[0]} entries; a graph of n >= 1 "
                             "nodes has n + 1")
        self.node_count = csr_row_ptr.shape[0] - 1
        self.edge_count = csr_col_ind.shape[0]
        self.csr_row_ptr = csr_row_ptr
        self.csr_col_ind = csr_col_ind

    def _set_attribute(self, table, kind, count, attr_name, attr_tensor):
        _check_wholememory_tensor(attr_tensor, "attr_tensor")
        if attr_name in table:
            raise ValueError(f"the graph already has a {kind} attribute {attr_name!r}")
        if attr_tensor.shape[0] != count:
            raise ValueError(f"{kind} attribute {attr_name!r} has {attr_tensor.shape[0]} rows; "
                             f"the graph has {count} {kind}s")
        table[attr_name] = attr_tensor

    def set_node_attribute(self, attr_name: str, attr_tensor: WholeMemoryTensor):
        self._set_attribute(self.node_attributes, "node", self.node_count, attr_name,
                            attr_tensor)

    def set_edge_attribute(self, attr_name: str, attr_tensor: WholeMemoryTensor):
        self._set_attribute(self.edge_attributes, "edge", self.edge_count, attr_name,
                            attr_tensor)

    def _require_graph(self):
        if self.csr_row_ptr is None:
            raise ValueError("the graph has no CSR yet: call set_csr_graph first")

    def unweighted_sample_without_replacement_one_hop(
            self, center_nodes_tensor: torch.Tensor, max_sample_count: int, *,
            random_seed: Union[int, None] = None, need_center_local_output: bool = False,
            need_edge_output: bool = False):
        """(offsets, sampled nodes[, centre positions][, edge ids]): see
        wholegraph_ops.unweighted_sample_without_replacement."""
        self._require_graph()
        return wholegraph_ops.unweighted_sample_without_replacement(
            self.csr_row_ptr.wmb_tensor, self.csr_col_ind.wmb_tensor, center_nodes_tensor,
            max_sample_count, random_seed, need_center_local_output, need_edge_output)

    def weighted_sample_without_replacement_one_hop(
            self, weight_name: str, center_nodes_tensor: torch.Tensor, max_sample_count: int,
            *, random_seed: Union[int, None] = None, need_center_local_output: bool = False,
            need_edge_output: bool = False):
        """As the unweighted one, with the edge attribute weight_name as weights."""
        self._require_graph()
        if weight_name not in self.edge_attributes:
            raise ValueError(f"the graph has no edge attribute {weight_name!r} (it has "
                             f"{sorted(self.edge_attributes)})")
        return wholegraph_ops.weighted_sample_without_replacement(
            self.csr_row_ptr.wmb_tensor, self.csr_col_ind.wmb_tensor,
            self.edge_attributes[weight_name].wmb_tensor, center_nodes_tensor,
            max_sample_count, random_seed, need_center_local_output, need_edge_output)

    def multilayer_sample_without_replacement(self, node_ids: torch.Tensor,
                                              max_neighbors: List[int],
                                              weight_name: Union[str, None] = None):
        """Samples len(max_neighbors) hops outwards from node_ids, max_neighbors[0] first.
        Returns (target_gids, edge_indice, csr_row_ptr, csr_col_ind), lists indexed by layer
        from the outermost (0) in: target_gids[hops] is node_ids and target_gids[i] the unique
        nodes of layer i (target_gids[i + 1] first); layer i's sub-graph has csr_row_ptr[i]
        (offsets per node of target_gids[i + 1]) and csr_col_ind[i] (each neighbour's position in
        target_gids[i]); edge_indice[i] stacks [csr_col_ind[i], each edge's centre position].
        Seeds are random for every hop, as upstream."""
        hops = len(max_neighbors)
        target_gids = [None] * (hops + 1)
        edge_indice = [None] * hops
        csr_row_ptr = [None] * hops
        csr_col_ind = [None] * hops
        target_gids[hops] = node_ids
        for layer in range(hops - 1, -1, -1):
            fanout = max_neighbors[hops - layer - 1]
            if weight_name is None:
                offsets, neighbours, centre_of = (
                    self.unweighted_sample_without_replacement_one_hop(
                        target_gids[layer + 1], fanout, need_center_local_output=True))
            else:
                offsets, neighbours, centre_of = self.weighted_sample_without_replacement_one_hop(
                    weight_name, target_gids[layer + 1], fanout, need_center_local_output=True)
            unique_nodes, neighbour_slot = graph_ops.append_unique(
                target_gids[layer + 1], neighbours, need_neighbor_raw_to_unique=True)
            csr_row_ptr[layer] = offsets
            csr_col_ind[layer] = neighbour_slot
            edge_indice[layer] = torch.stack([neighbour_slot, centre_of])
            target_gids[layer] = unique_nodes
        return target_gids, edge_indice, csr_row_ptr, csr_col_ind
