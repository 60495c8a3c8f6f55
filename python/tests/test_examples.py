"""examples/python: the KV-cache hand-off, the 4-rank, 2-node gather and the 4-rank, 2-node
GraphSAGE training run and check themselves (each exits non-zero when its check fails)."""

import os
import sys

import pytest

from conftest import REPO, memloom_run

EXAMPLES = os.path.join(REPO, "examples", "python")


@pytest.mark.parametrize("nodes", ["1", "2"])
def test_kv_transfer(launcher, nodes):
    job = launcher.popen([sys.executable, os.path.join(EXAMPLES, "kv_transfer.py"), "--nodes",
                          nodes], env={"MEMLOOM_LOG_LEVEL": "warn"})
    (out,) = job.wait(180)
    assert job.processes[0].returncode == 0, out
    assert "matches what prefill computed" in out and "kv_transfer: ok" in out, out


def test_wholememory_gather_4_ranks_2_nodes(launcher):
    job = launcher.popen([sys.executable, os.path.join(EXAMPLES, "wholememory_gather.py"),
                          "--ranks", "4", "--nodes", "2", "--rows", "20000", "--gather", "50000"],
                         env={"MEMLOOM_LOG_LEVEL": "warn"})
    (out,) = job.wait(200)
    assert job.processes[0].returncode == 0, out
    assert out.count("correct") == 4 and "HIERARCHY" in out, out
    assert "wholememory_gather: ok" in out, out


def test_gnn_training_4_ranks_2_nodes(launcher):
    job = launcher.popen([sys.executable, os.path.join(EXAMPLES, "gnn_training.py"), "--nodes",
                          "20000", "--steps", "20"],
                         env={"MEMLOOM_LOG_LEVEL": "warn", "MEMLOOM_RUN": memloom_run()})
    (out,) = job.wait(200)
    assert job.processes[0].returncode == 0, out
    losses = [float(line.split(" loss ")[1].split()[0]) for line in out.splitlines()
              if "] step " in line]
    assert len(losses) == 20, out
    assert losses[-1] < 0.8 * losses[0], losses
    assert "gnn_training: ok" in out, out
