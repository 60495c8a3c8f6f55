"""memloom.wholememory over several ranks, through memloom-run (ranks/wm_ranks.py)."""

import pytest


@pytest.mark.parametrize("ranks,nodes,kinds", [(2, 1, 8), (4, 2, 4)])
def test_every_memory_kind(launcher, tmp_path, ranks, nodes, kinds):
    out = launcher.memloom_run(ranks, "wm_ranks.py", str(tmp_path), nodes=nodes,
                               env={"MEMLOOM_LOG_LEVEL": "warn"})
    for rank in range(ranks):
        assert f"rank {rank} ok ({kinds} memory kinds)" in out, out
