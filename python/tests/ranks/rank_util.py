"""What the rank scripts share: who am I (memloom-run's MEMLOOM_* or torchrun's variables), and
passing a communicator's unique id from rank 0 to the others through a folder."""

import os
import pickle
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def rank_and_size():
    if "MEMLOOM_RANK" in os.environ:
        return int(os.environ["MEMLOOM_RANK"]), int(os.environ["MEMLOOM_WORLD_SIZE"])
    return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])


def share(folder, name, make, rank, timeout=60):
    """Rank 0 pickles make() into folder/name; every rank returns the unpickled value."""
    path = os.path.join(folder, name)
    if rank == 0:
        value = make()
        with open(path + ".tmp", "wb") as out:
            pickle.dump(value, out)
        os.rename(path + ".tmp", path)
        return value
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError(f"rank 0 did not publish {name} within {timeout} s")
        time.sleep(0.01)
    with open(path, "rb") as source:
        return pickle.load(source)


def expect(condition, message):
    if not condition:
        raise AssertionError(message)
