"""A rank of the multi-rank GraphStructure test (4 ranks over 2 nodes through memloom-run, with
MASTER_ADDR / MASTER_PORT set for torch.distributed): each node holds the graph CHUNKED over its
node communicator; every rank samples the same centres with the same seed, and the samples must
agree on every rank and with a CONTINUOUS copy of the graph this rank holds alone. Prints
"rank R ok"."""

import os

import torch
import torch.distributed as dist

from rank_util import expect
import pylibwholegraph.torch as wgth

NODES, SEED = 3000, 1234


def the_graph():
    # The same graph on every rank: a fixed generator, distinct neighbours per node.
    gen = torch.Generator().manual_seed(7)
    degrees = torch.randint(0, 40, (NODES,), generator=gen)
    row_ptr = torch.zeros(NODES + 1, dtype=torch.int64)
    row_ptr[1:] = torch.cumsum(degrees, 0)
    col = torch.cat([torch.randperm(NODES, generator=gen)[:d] for d in degrees.tolist()])
    weights = torch.rand(col.shape[0], generator=gen) + 0.01
    return row_ptr, col.to(torch.int32), weights


def wholememory_graph(comm, memory_type, row_ptr, col, weights):
    tensors = []
    for values in (row_ptr, col, weights):
        tensor = wgth.create_wholememory_tensor(comm, memory_type, "cpu", [values.shape[0]],
                                                values.dtype, None)
        local, start = tensor.get_local_tensor(host_view=True)
        local.copy_(values[start:start + local.shape[0]])
        del local
        tensors.append(tensor)
    comm.barrier()
    graph = wgth.GraphStructure()
    graph.set_csr_graph(tensors[0], tensors[1])
    graph.set_edge_attribute("weight", tensors[2])
    return graph, tensors


def samples(graph, centres):
    unweighted = graph.unweighted_sample_without_replacement_one_hop(
        centres, 7, random_seed=SEED, need_center_local_output=True, need_edge_output=True)
    weighted = graph.weighted_sample_without_replacement_one_hop(
        "weight", centres, 7, random_seed=SEED, need_edge_output=True)
    return [t.cpu() for t in unweighted + weighted]


def main():
    rank, size = int(os.environ["MEMLOOM_RANK"]), int(os.environ["MEMLOOM_WORLD_SIZE"])
    local_rank, local_size = (int(os.environ["MEMLOOM_LOCAL_RANK"]),
                              int(os.environ["MEMLOOM_LOCAL_SIZE"]))
    global_comm, node_comm = wgth.init_torch_env_and_create_wm_comm(
        rank, size, local_rank, local_size, wm_log_level="warn")
    expect(node_comm.get_size() == local_size and local_size < size, "ranks on several nodes")
    row_ptr, col, weights = the_graph()
    graph, tensors = wholememory_graph(node_comm, "chunked", row_ptr, col, weights)
    centres = torch.randint(0, NODES, (500,), generator=torch.Generator().manual_seed(99))
    mine = samples(graph, centres)

    alone, alone_tensors = wholememory_graph(wgth.get_local_device_communicator(), "continuous",
                                             row_ptr, col, weights)
    expect(all(torch.equal(a, b) for a, b in zip(mine, samples(alone, centres))),
           "CHUNKED over the node and CONTINUOUS on one rank sample differently")
    offsets, nodes, centre_of, edges = mine[:4]
    expect(torch.equal(col[edges].to(nodes.dtype), nodes), "edge ids name the sampled nodes")
    expect(torch.equal(offsets[1:] - offsets[:-1],
                       torch.clamp(row_ptr[centres + 1] - row_ptr[centres], max=7).to(torch.int32)),
           "sample counts")

    everyone = [None] * size
    dist.all_gather_object(everyone, mine)
    for other, theirs in enumerate(everyone):
        expect(len(theirs) == len(mine) and all(torch.equal(a, b) for a, b in zip(mine, theirs)),
               f"rank {other} sampled differently from rank {rank}")
    for tensor in tensors + alone_tensors:
        wgth.destroy_wholememory_tensor(tensor)
    wgth.finalize()
    print(f"rank {rank} ok ({nodes.shape[0]} samples agree on {size} ranks)")


if __name__ == "__main__":
    main()
