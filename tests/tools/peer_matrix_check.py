#!/usr/bin/env python3
"""memloom-info's peer access matrix on CUDA GPUs: N x N entries, the diagonal marked self, in the
JSON (every off-diagonal entry a full record) and in the text (a header of N GPUs and N rows of N
entries). Exits 77 (ctest: skipped) when memloom-info finds no CUDA backend.

usage: peer_matrix_check.py MEMLOOM_INFO
"""
import json
import os
import subprocess
import sys

SKIPPED = 77


def run(info, *args):
    env = dict(os.environ)
    env.pop("MEMLOOM_BACKEND", None)
    return subprocess.run([info, *args], env=env, check=True, capture_output=True, text=True,
                          timeout=60).stdout


def main():
    info = sys.argv[1]
    report = json.loads(run(info, "--json"))
    if report["backend"] != "cuda":
        print(f"no CUDA backend ({report['backend'] or report['backend_error']}): skipped")
        return SKIPPED
    count = len(report["devices"])
    matrix = report["peer_access"]
    assert report["peer_access_error"] == "", report["peer_access_error"]
    assert isinstance(matrix, list) and len(matrix) == count, matrix
    for row_index, row in enumerate(matrix):
        assert len(row) == count, (row_index, row)
        for column, entry in enumerate(row):
            if row_index == column:
                assert entry == "self", (row_index, entry)
                continue
            assert set(entry) == {"accessible", "performance_rank", "native_atomics"}, entry
            if entry["accessible"]:
                assert entry["performance_rank"] >= 0, entry

    lines = run(info).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("peer access"))
    header = lines[start + 1].split()
    assert header == [f"GPU{d}" for d in range(count)], header
    for row_index in range(count):
        cells = [cell.strip() for cell in lines[start + 2 + row_index].split("  ") if cell.strip()]
        assert cells[0] == f"GPU{row_index}" and len(cells) == count + 1, cells
        for column, cell in enumerate(cells[1:]):
            assert (cell == "self") == (row_index == column), (row_index, column, cell)
    print(f"peer access matrix: {count} x {count}, diagonal self")
    return 0


if __name__ == "__main__":
    sys.exit(main())
