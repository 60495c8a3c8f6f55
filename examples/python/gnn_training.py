"""A two-layer GraphSAGE step on a synthetic graph, 4 ranks over 2 (emulated) nodes: every
step samples two hops of neighbours with GraphStructure, gathers the nodes' features from a
WholeMemoryEmbedding, runs the model forward and backward, averages the dense gradients over
the ranks and applies the embedding's sparse gradients with its optimizer. Prints the loss of
every step and checks that it fell.

    PYTHONPATH=build/python python3 examples/python/gnn_training.py [--nodes 1000000]
        [--steps 20] [--batch 512] [--ranks 4] [--emulated-nodes 2] [--store URL]

starts its ranks through memloom-run (found as $MEMLOOM_RUN, on PATH, or in build/bin), with
the config store --store names (tcp:// or etcd://) or else memloom-run's embedded one. The
graph: node v is of class v % CLASSES and 80% of its edges go to nodes of its class; its
feature row is a noisy one-hot of its class, so the model learns by averaging neighbours. Each
node holds its own copy of the graph, CHUNKED over its node's ranks (sampling maps the CSR in
full); the feature table is DISTRIBUTED over all ranks."""

import argparse
import os
import shutil
import subprocess
import sys

import launch_ports  # beside this script

CLASSES, FEATURES, HIDDEN = 8, 32, 64
SAME_CLASS_PERCENT = 80
HERE = os.path.dirname(os.path.abspath(__file__))


def mix(x):
    """An integer mix in the style of splitmix64's finaliser, kept non-negative in int64: a
    node's or an edge's random numbers as a pure function of its id, so each rank builds only
    its own part of the graph and every rank agrees on it."""
    x = x ^ (x >> 31)
    x = x * 0x5EEC0FFEE + 0x1234567
    x = x ^ (x >> 29)
    x = x * 0x2545F491
    return (x ^ (x >> 32)) & 0x7FFFFFFFFFFFFFFF


def degrees_of(nodes):
    import torch
    return 4 + mix(torch.arange(nodes, dtype=torch.int64) * 3 + 1) % 12


def fill_graph(comm, nodes):
    """CHUNKED CSR over comm; each rank writes its own part of both arrays."""
    import torch
    import pylibwholegraph.torch as wgth
    row_ptr = torch.zeros(nodes + 1, dtype=torch.int64)
    row_ptr[1:] = torch.cumsum(degrees_of(nodes), 0)
    edges = int(row_ptr[-1])
    wm_row_ptr = wgth.create_wholememory_tensor(comm, "chunked", "cpu", [nodes + 1], torch.int64,
                                                None)
    wm_col = wgth.create_wholememory_tensor(comm, "chunked", "cpu", [edges], torch.int32, None)
    local, start = wm_row_ptr.get_local_tensor(host_view=True)
    local.copy_(row_ptr[start:start + local.shape[0]])
    local, start = wm_col.get_local_tensor(host_view=True)
    edge = torch.arange(start, start + local.shape[0], dtype=torch.int64)
    source = torch.searchsorted(row_ptr, edge, right=True) - 1
    h = mix(edge * 7 + 5)
    per_class = nodes // CLASSES
    same = (((source // CLASSES) + 1 + (h >> 8) % max(per_class - 1, 1)) % per_class) * CLASSES \
        + source % CLASSES
    other = (h >> 20) % nodes
    local.copy_(torch.where(h % 100 < SAME_CLASS_PERCENT, same, other).to(torch.int32))
    del local
    comm.barrier()
    graph = wgth.GraphStructure()
    graph.set_csr_graph(wm_row_ptr, wm_col)
    return graph, [wm_row_ptr, wm_col]


def make_features(comm, nodes, optimizer):
    import torch
    import pylibwholegraph.torch as wgth
    embedding = wgth.create_embedding(comm, "distributed", "cpu", torch.float32,
                                      [nodes, FEATURES], optimizer=optimizer)
    local, start = embedding.get_embedding_tensor().get_local_tensor(host_view=True)
    ids = torch.arange(start, start + local.shape[0])
    noise = torch.randn(local.shape, generator=torch.Generator().manual_seed(start))
    local.copy_(noise * 1.5)
    local[torch.arange(local.shape[0]), ids % CLASSES] += 1.0
    del local
    comm.barrier()
    return embedding


def mean_of_neighbours(x, offsets, edge_indice):
    import torch
    centres = offsets.shape[0] - 1
    total = torch.zeros(centres, x.shape[1], dtype=x.dtype).index_add_(
        0, edge_indice[1].long(), x[edge_indice[0].long()])
    counts = (offsets[1:] - offsets[:-1]).clamp(min=1).to(x.dtype)
    return total / counts[:, None]


def sage_model():
    import torch

    class Sage(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList([
                torch.nn.ModuleDict({"own": torch.nn.Linear(FEATURES, HIDDEN),
                                     "neighbours": torch.nn.Linear(FEATURES, HIDDEN)}),
                torch.nn.ModuleDict({"own": torch.nn.Linear(HIDDEN, CLASSES),
                                     "neighbours": torch.nn.Linear(HIDDEN, CLASSES)})])

        def forward(self, x, target_gids, edge_indice, csr_row_ptr):
            for layer, weights in enumerate(self.layers):
                # target_gids[layer + 1] lead target_gids[layer]: their rows come first in x.
                centres = target_gids[layer + 1].shape[0]
                x = weights["own"](x[:centres]) + weights["neighbours"](
                    mean_of_neighbours(x, csr_row_ptr[layer], edge_indice[layer]))
                if layer + 1 < len(self.layers):
                    x = torch.relu(x)
            return x

    torch.manual_seed(0)  # the same dense weights on every rank
    return Sage()


def rank_body(args):
    import torch
    import torch.distributed as dist
    import pylibwholegraph.torch as wgth

    rank, size = int(os.environ["MEMLOOM_RANK"]), int(os.environ["MEMLOOM_WORLD_SIZE"])
    global_comm, node_comm = wgth.init_torch_env_and_create_wm_comm(
        rank, size, int(os.environ["MEMLOOM_LOCAL_RANK"]), int(os.environ["MEMLOOM_LOCAL_SIZE"]),
        wm_log_level="warn")
    graph, graph_tensors = fill_graph(node_comm, args.nodes)
    optimizer = wgth.create_wholememory_optimizer("sgd", {})
    features = make_features(global_comm, args.nodes, optimizer)
    lookup = wgth.WholeMemoryEmbeddingModule(features)
    model = sage_model()
    dense = torch.optim.Adam(model.parameters(), lr=args.lr)
    batches = torch.Generator().manual_seed(1000 + rank)
    losses = []
    for step in range(args.steps):
        seeds = torch.randperm(args.nodes, generator=batches)[:args.batch]
        target_gids, edge_indice, csr_row_ptr, _ = graph.multilayer_sample_without_replacement(
            seeds, [args.fanout[0], args.fanout[1]])
        x = lookup(target_gids[0])
        logits = model(x, target_gids, edge_indice, csr_row_ptr)
        loss = torch.nn.functional.cross_entropy(logits, seeds % CLASSES)
        dense.zero_grad()
        loss.backward()
        for parameter in model.parameters():  # data parallel: the mean gradient of all ranks
            dist.all_reduce(parameter.grad)
            parameter.grad /= size
        dense.step()
        optimizer.step(args.lr)
        mean_loss = loss.detach().clone()
        dist.all_reduce(mean_loss)
        losses.append(float(mean_loss) / size)
        if rank == 0:
            print(f"step {step} loss {losses[-1]:.4f} ({target_gids[0].shape[0]} nodes sampled "
                  f"on rank 0)", flush=True)
    wgth.destroy_embedding(features)
    for tensor in graph_tensors:
        wgth.destroy_wholememory_tensor(tensor)
    wgth.finalize()
    if rank == 0:
        fell = losses[-1] < 0.8 * losses[0]
        print(f"gnn_training: loss {'fell' if fell else 'DID NOT FALL'} from {losses[0]:.4f} to "
              f"{losses[-1]:.4f} over {args.steps} steps", flush=True)
        if fell:
            print("gnn_training: ok", flush=True)
        return 0 if fell else 1
    return 0


def find_memloom_run():
    for candidate in (os.environ.get("MEMLOOM_RUN"), shutil.which("memloom-run"),
                      os.path.join(HERE, "..", "..", "build", "bin", "memloom-run")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    sys.exit("gnn_training: memloom-run not found (set MEMLOOM_RUN, put it on PATH, or build "
             "it into build/bin)")


def launch(args, argv):
    port = launch_ports.master_port()  # torch.distributed's rendezvous port
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    command = [find_memloom_run(), "-n", str(args.ranks), "--nodes", str(args.emulated_nodes),
               "--timeout", "600", *(["--store", args.store] if args.store else []),
               "--", sys.executable, os.path.abspath(__file__), *argv]
    return subprocess.call(command, env=env)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1_000_000, help="graph nodes")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=512, help="seed nodes per rank and step")
    parser.add_argument("--fanout", type=int, nargs=2, default=[10, 5],
                        help="neighbours sampled per node, first hop then second")
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--emulated-nodes", type=int, default=2)
    parser.add_argument("--store", help="config store URL for memloom-run --store")
    argv = sys.argv[1:]
    args = parser.parse_args(argv)
    if args.nodes < 2 * CLASSES or args.batch > args.nodes:
        parser.error(f"--nodes must be at least {2 * CLASSES} and at least --batch")
    if "MEMLOOM_RANK" in os.environ:  # a rank memloom-run started
        return rank_body(args)
    return launch(args, argv)


if __name__ == "__main__":
    sys.exit(main())
