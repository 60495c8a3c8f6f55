"""Prefill -> decode KV-cache hand-off with memfabric_hybrid's TransferEngine, the way LLM
serving stacks use it, checked byte for byte.

    python3 examples/python/kv_transfer.py [--layers 4] [--blocks 64] [--nodes 1|2] [--store URL]

Starts two processes: "Decode" allocates the KV cache (a torch tensor), registers it and tells
prefill its address; "Prefill" computes KV blocks, writes each layer with one batched write (and
the first block with a plain one) into decode's cache, and decode checks every byte. --nodes 2
puts them on two emulated nodes (the network path instead of direct copies). The config store is
--store (tcp:// or etcd://), else $MEMLOOM_STORE_URL, else a TCP store prefill starts on a free
port."""

import argparse
import multiprocessing as mp
import os
import sys
import time

import torch

import launch_ports  # beside this script

BLOCK_TOKENS, HEADS, HEAD_DIM = 16, 8, 64


def kv_blocks(layers, blocks):
    """What prefill computes: per layer, blocks of keys and values (fp16), reproducible."""
    generator = torch.Generator().manual_seed(1234)
    return torch.randn((layers, blocks, 2, BLOCK_TOKENS, HEADS, HEAD_DIM), generator=generator,
                       dtype=torch.float32).to(torch.float16)


def decode(args, names, pipe):
    from memfabric_hybrid import TransferEngine, get_last_err_msg

    engine = TransferEngine()
    deadline = time.monotonic() + 60
    # The prefill side starts the config store; retry until it is there.
    while engine.initialize(args.store_url, names[1], "Decode", 0, args.op) != 0:
        if time.monotonic() > deadline:
            raise RuntimeError("decode: " + get_last_err_msg())
        time.sleep(0.2)
    cache = torch.zeros((args.layers, args.blocks, 2, BLOCK_TOKENS, HEADS, HEAD_DIM),
                        dtype=torch.float16)
    nbytes = cache.element_size() * cache.numel()
    if engine.register_memory(cache.data_ptr(), nbytes) != 0:
        raise RuntimeError("decode: " + get_last_err_msg())
    pipe.send(cache.data_ptr())
    pipe.recv()  # prefill is done
    expected = kv_blocks(args.layers, args.blocks)
    good = torch.equal(cache, expected)
    print(f"decode: KV cache of {nbytes / 2**20:.1f} MiB received, "
          f"{'matches' if good else 'DOES NOT MATCH'} what prefill computed", flush=True)
    engine.unregister_memory(cache.data_ptr())
    engine.destroy()
    engine.unInitialize()
    sys.exit(0 if good else 1)


def prefill(args, names, pipe):
    from memfabric_hybrid import TransferEngine, create_config_store, get_last_err_msg

    if create_config_store(args.store_url) != 0:
        raise RuntimeError("prefill: " + get_last_err_msg())
    engine = TransferEngine()
    if engine.initialize(args.store_url, names[0], "Prefill", 0, args.op) != 0:
        raise RuntimeError("prefill: " + get_last_err_msg())
    kv = kv_blocks(args.layers, args.blocks)
    if engine.register_memory(kv.data_ptr(), kv.element_size() * kv.numel()) != 0:
        raise RuntimeError("prefill: " + get_last_err_msg())
    remote = pipe.recv()
    block_bytes = kv[0, 0].element_size() * kv[0, 0].numel()
    start = time.perf_counter()
    # The first block with a plain write, then every layer's remaining blocks in one batch.
    if engine.transfer_sync_write(names[1], kv[0, 0].data_ptr(), remote, block_bytes) != 0:
        raise RuntimeError("prefill: " + get_last_err_msg())
    for layer in range(args.layers):
        first = 1 if layer == 0 else 0
        sources = [kv[layer, b].data_ptr() for b in range(first, args.blocks)]
        targets = [remote + (kv[layer, b].data_ptr() - kv.data_ptr())
                   for b in range(first, args.blocks)]
        code = engine.batch_transfer_sync_write(names[1], sources, targets,
                                                [block_bytes] * len(sources))
        if code != 0:
            raise RuntimeError(f"prefill: layer {layer}: {get_last_err_msg()}")
    took = time.perf_counter() - start
    total = block_bytes * args.layers * args.blocks
    print(f"prefill: wrote {args.layers} layers x {args.blocks} blocks "
          f"({total / 2**20:.1f} MiB) in {took * 1e3:.1f} ms", flush=True)
    pipe.send("done")
    engine.unregister_memory(kv.data_ptr())
    engine.destroy()
    engine.unInitialize()


def run(role, args, names, pipe, node):
    os.environ["MEMLOOM_NODE"] = node
    (prefill if role == "prefill" else decode)(args, names, pipe)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--blocks", type=int, default=64)
    parser.add_argument("--nodes", type=int, choices=(1, 2), default=1)
    parser.add_argument("--store", help="config store URL (an etcd one is used as it runs)")
    args = parser.parse_args()
    ports = launch_ports.free_ports(3)
    args.store_url = (args.store or os.environ.get("MEMLOOM_STORE_URL")
                      or f"tcp://127.0.0.1:{ports[0]}")
    from memfabric_hybrid import TransferEngine
    args.op = int(TransferEngine.TransDataOpType.SDMA if args.nodes == 1
                  else TransferEngine.TransDataOpType.DEVICE_RDMA)
    names = [f"127.0.0.1:{ports[1]}", f"127.0.0.1:{ports[2]}"]
    context = mp.get_context("spawn")  # each role initialises memloom in a fresh process
    ours, theirs = context.Pipe()
    nodes = ["kv-node0", "kv-node0" if args.nodes == 1 else "kv-node1"]
    roles = [context.Process(target=run, args=("prefill", args, names, ours, nodes[0])),
             context.Process(target=run, args=("decode", args, names, theirs, nodes[1]))]
    for process in roles:
        process.start()
    for process in roles:
        process.join(timeout=120)
    failed = False
    for process in roles:
        if process.is_alive():
            process.kill()
            process.join()
            failed = True
        failed = failed or process.exitcode != 0
    print("kv_transfer: " + ("FAILED" if failed else "ok"))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
