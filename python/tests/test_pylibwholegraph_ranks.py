"""pylibwholegraph.torch over several ranks (ranks/wg_ranks.py): started torchrun-style (RANK,
WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and through memloom-run with
distributed_launch's environment-name options."""

import pytest

from conftest import free_port


@pytest.mark.parametrize("ranks,nodes", [(2, 1), (4, 2)])
def test_torchrun_style(launcher, tmp_path, ranks, nodes):
    outputs = launcher.torchrun_style(ranks, "wg_ranks.py", str(tmp_path), "--launch-agent",
                                      "pytorch", nodes=nodes, env={"MEMLOOM_LOG_LEVEL": "warn"})
    for rank, out in enumerate(outputs):
        assert f"rank {rank} ok" in out, out


def test_memloom_run(launcher, tmp_path):
    out = launcher.memloom_run(
        2, "wg_ranks.py", str(tmp_path), "--launch-agent", "pytorch",
        "--launch-env-name-world-rank", "MEMLOOM_RANK",
        "--launch-env-name-world-size", "MEMLOOM_WORLD_SIZE",
        "--launch-env-name-local-rank", "MEMLOOM_LOCAL_RANK", "--local-size", "2",
        env={"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": free_port(), "MEMLOOM_LOG_LEVEL": "warn"})
    assert "rank 0 ok" in out and "rank 1 ok" in out, out
