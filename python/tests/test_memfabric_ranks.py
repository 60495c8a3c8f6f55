"""memfabric_hybrid's bm, shm and TransferEngine over two ranks (ranks/mf_ranks.py,
ranks/trans_ranks.py), on one emulated node and across two."""

import pytest

from conftest import free_port


@pytest.mark.parametrize("nodes", [1, 2])
def test_bm_and_shm(launcher, nodes):
    out = launcher.memloom_run(2, "mf_ranks.py", f"tcp://127.0.0.1:{free_port()}",
                               f"tcp://127.0.0.1:{free_port()}", nodes=nodes,
                               env={"MEMLOOM_LOG_LEVEL": "warn"})
    assert "rank 0 ok" in out and "rank 1 ok" in out, out


@pytest.mark.parametrize("nodes", [1, 2])
def test_transfer_engine(launcher, tmp_path, nodes):
    out = launcher.memloom_run(2, "trans_ranks.py", str(tmp_path),
                               f"tcp://127.0.0.1:{free_port()}", str(free_port()),
                               str(free_port()), "direct" if nodes == 1 else "network",
                               nodes=nodes, env={"MEMLOOM_LOG_LEVEL": "warn"})
    assert "rank 0 ok" in out and "rank 1 ok" in out, out
