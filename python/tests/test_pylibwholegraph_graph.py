"""pylibwholegraph.torch GraphStructure: neighbour sampling checked against the CSR it samples
(real neighbours, distinct, min(fanout, degree) of them), seeds, weighted sampling's
frequencies, multilayer sub-graphs, append_unique, bad input, and 4 ranks over 2 nodes agreeing
(ranks/wg_graph_ranks.py)."""

import pytest
import torch

import pylibwholegraph.torch as wgth
from pylibwholegraph.torch import graph_ops, wholegraph_ops
from _memloom_native import wholememory as native

from conftest import free_port


def random_csr(nodes, max_degree, seed):
    """A CSR with distinct neighbours per node (so distinct samples mean distinct nodes), some
    nodes without any."""
    gen = torch.Generator().manual_seed(seed)
    degrees = torch.randint(0, max_degree + 1, (nodes,), generator=gen)
    row_ptr = torch.zeros(nodes + 1, dtype=torch.int64)
    row_ptr[1:] = torch.cumsum(degrees, 0)
    col = torch.cat([torch.randperm(nodes, generator=gen)[:d] for d in degrees.tolist()])
    return row_ptr, col


def wholememory_of(comm, values, memory_type="chunked"):
    tensor = wgth.create_wholememory_tensor(comm, memory_type, "cpu", [values.shape[0]],
                                            values.dtype, None)
    tensor.scatter(values, torch.arange(values.shape[0]))
    return tensor


class Graph:
    """A GraphStructure over WholeMemory copies of torch CSR arrays; destroys them at the end."""

    def __init__(self, comm, row_ptr, col, weights=None, memory_type="chunked"):
        self.row_ptr, self.col = row_ptr, col
        self.tensors = [wholememory_of(comm, row_ptr, memory_type),
                        wholememory_of(comm, col, memory_type)]
        self.graph = wgth.GraphStructure()
        self.graph.set_csr_graph(*self.tensors)
        if weights is not None:
            self.tensors.append(wholememory_of(comm, weights, memory_type))
            self.graph.set_edge_attribute("weight", self.tensors[-1])

    def neighbours(self, node):
        return self.col[self.row_ptr[node]:self.row_ptr[node + 1]]

    def close(self):
        for tensor in self.tensors:
            wgth.destroy_wholememory_tensor(tensor)


@pytest.fixture
def make_graph(wg_comm):
    graphs = []

    def make(*args, **kwargs):
        graphs.append(Graph(wg_comm, *args, **kwargs))
        return graphs[-1]

    yield make
    for graph in graphs:
        graph.close()


def check_samples(g, centres, fanout, offsets, nodes, centre_of, edges):
    degrees = (g.row_ptr[centres.long() + 1] - g.row_ptr[centres.long()])
    expected = degrees if fanout <= 0 else torch.clamp(degrees, max=fanout)
    assert offsets.dtype == torch.int32 and offsets[0] == 0
    assert torch.equal((offsets[1:] - offsets[:-1]).long(), expected)
    assert nodes.dtype == g.col.dtype and centre_of.dtype == torch.int32
    assert edges.dtype == torch.int64 and nodes.shape == centre_of.shape == edges.shape
    for i, centre in enumerate(centres.tolist()):
        begin, end = offsets[i].item(), offsets[i + 1].item()
        assert torch.all(centre_of[begin:end] == i)
        picked = nodes[begin:end]
        assert len(set(picked.tolist())) == end - begin, f"centre {centre}: repeated samples"
        assert set(picked.tolist()) <= set(g.neighbours(centre).tolist()), f"centre {centre}"
        picked_edges = edges[begin:end]
        assert torch.all((picked_edges >= g.row_ptr[centre]) &
                         (picked_edges < g.row_ptr[centre + 1]))
        assert torch.equal(g.col[picked_edges], picked)


@pytest.mark.parametrize("memory_type", ["continuous", "chunked"])
@pytest.mark.parametrize("col_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("fanout", [1, 6, 100, -1])
def test_unweighted_samples_are_distinct_neighbours(make_graph, memory_type, col_dtype, fanout):
    row_ptr, col = random_csr(300, 20, seed=1)
    g = make_graph(row_ptr, col.to(col_dtype), memory_type=memory_type)
    centres = torch.randint(0, 300, (120,), generator=torch.Generator().manual_seed(2),
                            dtype=torch.int32)
    out = g.graph.unweighted_sample_without_replacement_one_hop(
        centres, fanout, random_seed=3, need_center_local_output=True, need_edge_output=True)
    assert len(out) == 4
    check_samples(g, centres, fanout, *out)
    if fanout <= 0:  # every neighbour, in CSR order
        assert torch.equal(out[1], torch.cat([g.neighbours(c) for c in centres.tolist()]))


def test_return_tuples_follow_the_flags(make_graph):
    row_ptr, col = random_csr(50, 8, seed=4)
    g = make_graph(row_ptr, col)
    centres = torch.arange(50)
    full = g.graph.unweighted_sample_without_replacement_one_hop(
        centres, 3, random_seed=9, need_center_local_output=True, need_edge_output=True)
    two = g.graph.unweighted_sample_without_replacement_one_hop(centres, 3, random_seed=9)
    with_centres = g.graph.unweighted_sample_without_replacement_one_hop(
        centres, 3, random_seed=9, need_center_local_output=True)
    with_edges = g.graph.unweighted_sample_without_replacement_one_hop(
        centres, 3, random_seed=9, need_edge_output=True)
    assert len(two) == 2 and len(with_centres) == 3 and len(with_edges) == 3
    for got, want in ((two, full[:2]), (with_centres, full[:3]),
                      (with_edges, (full[0], full[1], full[3]))):
        assert all(torch.equal(a, b) for a, b in zip(got, want))


def test_seeds(make_graph):
    row_ptr, col = random_csr(400, 30, seed=5)
    g = make_graph(row_ptr, col)
    centres = torch.arange(400)

    def sample(seed):
        return g.graph.unweighted_sample_without_replacement_one_hop(centres, 4, random_seed=seed)

    first, again, other = sample(11), sample(11), sample(12)
    assert torch.equal(first[0], again[0]) and torch.equal(first[1], again[1])
    assert torch.equal(first[0], other[0]) and not torch.equal(first[1], other[1])
    # A seed gives each centre the same samples in any batch: key (seed, centre, position).
    some = torch.tensor([399, 7, 123])
    part = g.graph.unweighted_sample_without_replacement_one_hop(some, 4, random_seed=11)
    expected = torch.cat([first[1][first[0][c]:first[0][c + 1]] for c in some.tolist()])
    assert torch.equal(part[1], expected)
    # No seed: a random one each call.
    unseeded = [g.graph.unweighted_sample_without_replacement_one_hop(centres, 4)[1]
                for _ in range(3)]
    assert not (torch.equal(unseeded[0], unseeded[1]) and torch.equal(unseeded[1], unseeded[2]))


def test_weighted_sampling_follows_the_weights(make_graph):
    # 2000 copies of one star: nodes 4.. each have the leaves 0..3 with weights 1, 2, 3, 4;
    # distinct centres draw independently, so one call gives 2000 draws.
    copies, leaf_weights = 2000, torch.tensor([1.0, 2.0, 3.0, 4.0])
    nodes = copies + 4
    degrees = torch.cat([torch.zeros(4, dtype=torch.int64),
                         torch.full((copies,), 4, dtype=torch.int64)])
    row_ptr = torch.zeros(nodes + 1, dtype=torch.int64)
    row_ptr[1:] = torch.cumsum(degrees, 0)
    col = torch.arange(4, dtype=torch.int32).repeat(copies)
    g = make_graph(row_ptr, col, weights=leaf_weights.repeat(copies))
    centres = torch.arange(4, nodes)
    offsets, picked, edges = g.graph.weighted_sample_without_replacement_one_hop(
        "weight", centres, 1, random_seed=21, need_edge_output=True)
    assert torch.equal(offsets, torch.arange(copies + 1, dtype=torch.int32))
    assert torch.equal(col[edges], picked)
    observed = torch.bincount(picked.long(), minlength=4).double()
    expected = leaf_weights.double() / leaf_weights.sum() * copies
    chi_square = float(((observed - expected) ** 2 / expected).sum())
    assert chi_square < 16.27, (observed, expected)  # 3 degrees of freedom, p = 0.001
    # Two of four without replacement: heavier leaves are kept more often, none twice.
    offsets, picked = g.graph.weighted_sample_without_replacement_one_hop(
        "weight", centres, 2, random_seed=22)
    pairs = picked.view(copies, 2)
    assert torch.all(pairs[:, 0] != pairs[:, 1])
    kept = torch.bincount(picked.long(), minlength=4)
    assert kept[0] < kept[1] < kept[2] < kept[3], kept
    unweighted = g.graph.unweighted_sample_without_replacement_one_hop(centres, 1,
                                                                       random_seed=21)[1]
    flat = torch.bincount(unweighted.long(), minlength=4).double()
    assert float(((flat - copies / 4) ** 2 / (copies / 4)).sum()) < 16.27, flat


@pytest.mark.parametrize("weighted", [False, True])
def test_multilayer_sub_graphs(make_graph, weighted):
    row_ptr, col = random_csr(500, 12, seed=6)
    weights = torch.rand(col.shape[0], generator=torch.Generator().manual_seed(6)) + 0.1
    g = make_graph(row_ptr, col, weights=weights)
    seeds = torch.randperm(500, generator=torch.Generator().manual_seed(8))[:40]
    fanouts = [5, 3]
    target_gids, edge_indice, csr_row_ptr, csr_col_ind = (
        g.graph.multilayer_sample_without_replacement(seeds, fanouts,
                                                      "weight" if weighted else None))
    hops = len(fanouts)
    assert len(target_gids) == hops + 1 and len(edge_indice) == len(csr_row_ptr) == hops
    assert torch.equal(target_gids[hops], seeds)
    for layer in range(hops):
        inner, outer = target_gids[layer + 1], target_gids[layer]
        fanout = fanouts[hops - layer - 1]
        assert torch.equal(outer[:inner.shape[0]], inner)
        assert torch.unique(outer).shape[0] == outer.shape[0]
        offsets, slots = csr_row_ptr[layer], csr_col_ind[layer]
        assert offsets.shape[0] == inner.shape[0] + 1 and slots.shape[0] == offsets[-1]
        degrees = row_ptr[inner + 1] - row_ptr[inner]
        assert torch.equal((offsets[1:] - offsets[:-1]).long(), torch.clamp(degrees, max=fanout))
        assert edge_indice[layer].shape == (2, slots.shape[0])
        assert torch.equal(edge_indice[layer][0], slots)
        for edge in range(slots.shape[0]):
            centre = inner[edge_indice[layer][1][edge]].item()
            assert outer[slots[edge]].item() in g.neighbours(centre).tolist()
        # Every node of the outer layer is a target or one of their samples.
        assert outer.shape[0] == inner.shape[0] + len(
            set(outer[slots.long()].tolist()) - set(inner.tolist()))


def test_append_unique_keeps_targets_and_first_appearance():
    targets = torch.tensor([3, 11, 2, 10])
    neighbours = torch.tensor([4, 5, 2, 11, 6, 9, 10, 5])
    unique, mapping = graph_ops.append_unique(targets, neighbours,
                                              need_neighbor_raw_to_unique=True)
    assert torch.equal(unique, torch.tensor([3, 11, 2, 10, 4, 5, 6, 9]))
    assert mapping.dtype == torch.int32
    assert torch.equal(mapping, torch.tensor([4, 5, 2, 1, 6, 7, 3, 5], dtype=torch.int32))
    assert torch.equal(graph_ops.append_unique(targets, torch.tensor([], dtype=torch.int64)),
                       targets)
    with pytest.raises(ValueError, match="repeated"):
        graph_ops.append_unique(torch.tensor([1, 1]), neighbours)


def self_loop_reference(row_ptr, col):
    """Row by row in Python: the row's own id, then its neighbours in CSR order."""
    out_row_ptr, out_col = [0], []
    for row in range(row_ptr.shape[0] - 1):
        out_col.append(row)
        out_col.extend(col[row_ptr[row]:row_ptr[row + 1]].tolist())
        out_row_ptr.append(len(out_col))
    return (torch.tensor(out_row_ptr, dtype=torch.int32),
            torch.tensor(out_col, dtype=torch.int32))


def test_add_csr_self_loop_matches_a_reference(wg_comm):
    row_ptr, col = random_csr(300, 9, seed=12)  # some rows without any neighbour
    row_ptr, col = row_ptr.to(torch.int32), col.to(torch.int32)
    looped_row_ptr, looped_col = graph_ops.add_csr_self_loop(row_ptr, col)
    expected_row_ptr, expected_col = self_loop_reference(row_ptr, col)
    assert looped_row_ptr.dtype == torch.int32 and looped_col.dtype == torch.int32
    assert torch.equal(looped_row_ptr, expected_row_ptr)
    assert torch.equal(looped_col, expected_col)
    # Non-contiguous inputs are read as their values; a graph of no rows is one row pointer.
    spread = torch.zeros(2 * row_ptr.shape[0], dtype=torch.int32)
    spread[::2] = row_ptr
    assert torch.equal(graph_ops.add_csr_self_loop(spread[::2], col)[1], expected_col)
    empty_row_ptr, empty_col = graph_ops.add_csr_self_loop(
        torch.zeros(1, dtype=torch.int32), torch.tensor([], dtype=torch.int32))
    assert empty_row_ptr.tolist() == [0] and empty_col.shape[0] == 0


def test_add_csr_self_loop_bad_input(wg_comm):
    row_ptr, col = torch.tensor([0, 1], dtype=torch.int32), torch.tensor([0], dtype=torch.int32)
    with pytest.raises(TypeError, match="csr_row_ptr_tensor has dtype torch.int64"):
        graph_ops.add_csr_self_loop(row_ptr.long(), col)
    with pytest.raises(ValueError, match="csr_col_ptr_tensor must be 1-D"):
        graph_ops.add_csr_self_loop(row_ptr, col.reshape(1, 1))
    with pytest.raises(TypeError, match="must be a torch.Tensor"):
        graph_ops.add_csr_self_loop([0, 1], col)
    with pytest.raises(ValueError, match="rows \\+ 1"):
        graph_ops.add_csr_self_loop(torch.tensor([], dtype=torch.int32), col)


def test_bad_input(make_graph, wg_comm):
    row_ptr, col = random_csr(20, 5, seed=10)
    g = make_graph(row_ptr, col)
    graph = g.graph
    with pytest.raises(TypeError, match="center_nodes_tensor has dtype torch.float32"):
        graph.unweighted_sample_without_replacement_one_hop(torch.tensor([1.0]), 2)
    with pytest.raises(ValueError, match="center_nodes_tensor must be 1-D, got 2-D"):
        graph.unweighted_sample_without_replacement_one_hop(torch.tensor([[1, 2]]), 2)
    with pytest.raises(TypeError, match="center_nodes_tensor must be a torch.Tensor"):
        graph.unweighted_sample_without_replacement_one_hop([1, 2], 2)
    with pytest.raises(TypeError, match="max_sample_count"):
        graph.unweighted_sample_without_replacement_one_hop(torch.tensor([1]), 2.5)
    with pytest.raises(ValueError, match="random_seed"):
        graph.unweighted_sample_without_replacement_one_hop(torch.tensor([1]), 2, random_seed=-1)
    with pytest.raises(RuntimeError, match="center node 20 .* not a node of a graph of 20"):
        graph.unweighted_sample_without_replacement_one_hop(torch.tensor([3, 20]), 2)
    with pytest.raises(ValueError, match="no edge attribute 'weight'"):
        graph.weighted_sample_without_replacement_one_hop("weight", torch.tensor([1]), 2)
    with pytest.raises(ValueError, match="set_csr_graph first"):
        wgth.GraphStructure().unweighted_sample_without_replacement_one_hop(torch.tensor([1]), 2)
    int32_rows = wholememory_of(wg_comm, row_ptr.to(torch.int32))
    g.tensors.append(int32_rows)
    with pytest.raises(TypeError, match="csr_row_ptr has dtype torch.int32"):
        wgth.GraphStructure().set_csr_graph(int32_rows, g.tensors[1])
    with pytest.raises(TypeError, match="must be a WholeMemoryTensor"):
        wgth.GraphStructure().set_csr_graph(row_ptr, col)
    with pytest.raises(ValueError, match="edge attribute 'w' has 21 rows; the graph has"):
        graph.set_edge_attribute("w", g.tensors[0])
    with pytest.raises(ValueError, match="node attribute 'n' has 21 rows; the graph has 20"):
        graph.set_node_attribute("n", g.tensors[0])
    graph.set_node_attribute("n", wholememory_of(wg_comm, torch.zeros(20)))
    g.tensors.append(graph.node_attributes["n"])
    with pytest.raises(ValueError, match="already has a node attribute 'n'"):
        graph.set_node_attribute("n", graph.node_attributes["n"])


def test_native_allocator_errors_cross_as_python_errors(make_graph):
    row_ptr, col = random_csr(20, 5, seed=12)
    g = make_graph(row_ptr, col)
    rows, cols = (t.wmb_tensor for t in g.tensors[:2])
    centres, offsets = torch.arange(20), torch.empty(21, dtype=torch.int32)

    def wrong_dtype(count, dtype):
        return torch.empty(count, dtype=torch.float64)

    def failing(count, dtype):
        raise KeyError("no memory today")

    with pytest.raises(ValueError, match="writable contiguous array"):
        native.csr_sample_without_replacement(rows, cols, None, centres, 3, 1, offsets,
                                              wrong_dtype)
    with pytest.raises(KeyError, match="no memory today"):
        native.csr_sample_without_replacement(rows, cols, None, centres, 3, 1, offsets, failing)
    with pytest.raises(TypeError, match="allocate must be callable"):
        native.csr_sample_without_replacement(rows, cols, None, centres, 3, 1, offsets, None)
    with pytest.raises(TypeError, match="wm_csr_row_ptr_tensor must be a WholeMemory tensor"):
        wholegraph_ops.unweighted_sample_without_replacement(row_ptr, cols, centres, 3)


def test_four_ranks_on_two_nodes_agree(launcher):
    out = launcher.memloom_run(4, "wg_graph_ranks.py", nodes=2,
                               env={"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": free_port(),
                                    "MEMLOOM_LOG_LEVEL": "warn"})
    for rank in range(4):
        assert f"rank {rank} ok" in out, out
