"""The packages work installed, from outside the source and build trees: `cmake --install` into a
prefix, and `pip install --no-build-isolation ./python` into a venv (nothing downloaded)."""

import os
import subprocess
import sys

import pytest

from conftest import REPO

SMOKE = r"""
import numpy as np, memloom, memfabric_hybrid, pylibwholegraph.torch
from memloom import wholememory as wm
print("version", memloom.__version__)
assert "/work" not in memloom.__file__ or "site-packages" in memloom.__file__, memloom.__file__
wm.init(0, wm.LogLevel.WARN)
comm = wm.create_communicator(wm.create_unique_id(), 0, 1)
table = wm.create_tensor(comm, (8, 2), np.int64)
np.asarray(table.local_view())[:] = np.arange(16).reshape(8, 2)
assert wm.gather(table, np.array([5], dtype=np.int64)).tolist() == [[10, 11]]
table.destroy(); comm.destroy(); wm.finalize()
print("from", memloom.__file__)
"""


def build_dir():
    path = os.environ.get("MEMLOOM_CMAKE_BUILD_DIR")
    if not path:
        pytest.fail("MEMLOOM_CMAKE_BUILD_DIR must name the CMake build (ctest sets it)")
    return path


def clean_env(**extra):
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env.update(extra)
    return env


def run_smoke(python, tmp_path, **env):
    out = subprocess.run([python, "-c", SMOKE], cwd=tmp_path, env=clean_env(**env), text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    assert out.returncode == 0, out.stdout
    return out.stdout


def version():
    with open(os.path.join(REPO, "CMakeLists.txt")) as cmake:
        return cmake.read().split("project(memloom VERSION ")[1].split()[0]


def test_cmake_install(tmp_path):
    prefix = tmp_path / "prefix"
    subprocess.run(["cmake", "--install", build_dir(), "--prefix", str(prefix)], check=True,
                   stdout=subprocess.DEVNULL, timeout=120)
    (site,) = list(prefix.glob("lib*/python3*/*-packages"))
    out = run_smoke(sys.executable, tmp_path, PYTHONPATH=str(site))
    assert f"version {version()}" in out and str(site) in out, out


def test_pip_install_into_a_venv(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True, timeout=120)
    python = str(venv / "bin" / "python")
    work = tmp_path / "pip-build"
    install = subprocess.run(
        [python, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-deps",
         os.path.join(REPO, "python")], cwd=tmp_path, env=clean_env(TMPDIR=str(tmp_path)),
        text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    assert install.returncode == 0, install.stdout
    out = run_smoke(python, tmp_path)
    assert f"version {version()}" in out and str(venv) in out, out
    assert (venv / "lib").exists()
    del work
