"""The Python packages' speed, as ratios measured in one run (the machines here are shared):

1. gather: a Python gather of --rows rows of 512 B through DLPack (torch index and output
   tensors, converted on every call) against the same gather run from C++ (tensors wrapped once,
   a C++ loop); paired runs, alternating which goes first, median of the pairs' ratios.
2. TRANS: the per-call time of a small TransferEngine.transfer_sync_write from Python minus the
   same smem_trans_write called in a C++ loop (median of rounds, in microseconds).
3. copies: the addresses of a tensor's local view and of the numpy and torch arrays made from it
   (equal: nothing was copied).

    PYTHONPATH=build/python python3 bench/python/bench_python.py [--rows 1048576]
"""

import argparse
import socket
import statistics
import time

import numpy as np
import torch

import memfabric_hybrid as mf
from memfabric_hybrid import TransferEngine
from _memloom_native import wholememory as _native_wm
from memloom import wholememory as wm

COLUMNS = 128  # float32: 512-byte rows


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def bench_gather(comm, rows, table_rows, repeat):
    table = wm.create_tensor(comm, (table_rows, COLUMNS), np.float32)
    local = torch.from_dlpack(table.local_view())
    local.copy_(torch.arange(table_rows, dtype=torch.float32)[:, None].expand(-1, COLUMNS))
    del local
    indices = torch.randint(0, table_rows, (rows,), generator=torch.Generator().manual_seed(1))
    output = torch.empty((rows, COLUMNS), dtype=torch.float32)
    table.gather(indices, output)  # warm: pages of the output touched once
    assert torch.equal(output[:, 0], indices.to(torch.float32)), "gather is wrong"
    ratios, python_times, c_times = [], [], []
    for i in range(repeat):
        def python_once():
            start = time.perf_counter()
            table.gather(indices, output)
            return time.perf_counter() - start

        def c_once():
            return _native_wm._time_c_gather(table, indices, output, 1)

        if i % 2 == 0:
            t_py, t_c = python_once(), c_once()
        else:
            t_c, t_py = c_once(), python_once()
        python_times.append(t_py)
        c_times.append(t_c)
        ratios.append(t_c / t_py)
    table.destroy()
    return statistics.median(ratios), statistics.median(python_times), statistics.median(c_times)


def bench_trans(calls, rounds):
    store = f"tcp://127.0.0.1:{free_port()}"
    names = [f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"]
    assert mf.create_config_store(store) == 0, mf.get_last_err_msg()
    sender, receiver = TransferEngine(), TransferEngine()
    assert receiver.initialize(store, names[1], "Decode", 0) == 0, mf.get_last_err_msg()
    assert sender.initialize(store, names[0], "Prefill", 0) == 0, mf.get_last_err_msg()
    target, source = np.zeros(4096, np.uint8), np.ones(64, np.uint8)
    assert receiver.register_memory(target, target.nbytes) == 0, mf.get_last_err_msg()
    assert sender.register_memory(source, source.nbytes) == 0, mf.get_last_err_msg()
    src, dst = source.__array_interface__["data"][0], target.__array_interface__["data"][0]
    dest = names[1]
    write = sender.transfer_sync_write
    assert write(dest, src, dst, 64) == 0, mf.get_last_err_msg()
    overheads, python_times, c_times = [], [], []
    for i in range(rounds):
        def python_round():
            start = time.perf_counter()
            for _ in range(calls):
                write(dest, src, dst, 64)
            return (time.perf_counter() - start) / calls

        def c_round():
            return sender._time_c_write(dest, src, dst, 64, calls)

        if i % 2 == 0:
            t_py, t_c = python_round(), c_round()
        else:
            t_c, t_py = c_round(), python_round()
        python_times.append(t_py)
        c_times.append(t_c)
        overheads.append(t_py - t_c)
    assert np.all(target[:64] == 1), "the writes did not land"
    sender.destroy()
    receiver.destroy()
    sender.unInitialize()
    return (statistics.median(overheads) * 1e6, statistics.median(python_times) * 1e6,
            statistics.median(c_times) * 1e6)


def show_no_copies(comm):
    table = wm.create_tensor(comm, (1024, COLUMNS), np.float32)
    view = table.local_view()
    as_numpy = np.from_dlpack(table.local_view())
    as_array = np.asarray(table.local_view())
    as_torch = torch.from_dlpack(table.local_view())
    addresses = {"local view": view.ptr,
                 "numpy.from_dlpack": as_numpy.__array_interface__["data"][0],
                 "numpy.asarray": as_array.__array_interface__["data"][0],
                 "torch.from_dlpack": as_torch.data_ptr()}
    del view, as_numpy, as_array, as_torch
    table.destroy(force=True)
    return addresses


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1 << 20)
    parser.add_argument("--table-rows", type=int, default=1 << 18)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    wm.init(0, wm.LogLevel.WARN)
    comm = wm.create_communicator(wm.create_unique_id(), 0, 1)
    ratio, t_py, t_c = bench_gather(comm, args.rows, args.table_rows, args.repeat)
    print(f"gather {args.rows} x 512 B rows: Python/DLPack {t_py * 1e3:.1f} ms, C++ "
          f"{t_c * 1e3:.1f} ms per call; ratio (C++ time / Python time) {ratio:.3f} "
          f"(target >= 0.95)")
    overhead, us_py, us_c = bench_trans(args.calls, args.rounds)
    print(f"TRANS write of 64 B: Python {us_py:.2f} us, C {us_c:.2f} us per call; Python "
          f"overhead {overhead:.2f} us (target <= 3)")
    addresses = show_no_copies(comm)
    for name, address in addresses.items():
        print(f"  {name:18s} 0x{address:x}")
    print("copies: " + ("none (one address)" if len(set(addresses.values())) == 1
                        else "COPIED (addresses differ)"))
    comm.destroy()
    wm.finalize()


if __name__ == "__main__":
    main()
