"""Shared by the Python tests: a time limit on every test, ranks started through memloom-run or
as plain subprocesses with torchrun-style variables, and cleanup of processes and /dev/shm."""

import faulthandler
import importlib.util
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
RANKS = os.path.join(HERE, "ranks")
REPO = os.path.dirname(os.path.dirname(HERE))
TEST_TIMEOUT_S = 240  # every test; ctest's own limit (300 s) stays above it


@pytest.fixture(autouse=True)
def time_limit():
    # A test that hangs dumps every thread's stack and ends the process (pytest has no built-in
    # time-out; pytest-timeout is not packaged for this Python).
    faulthandler.dump_traceback_later(TEST_TIMEOUT_S, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture(scope="module")
def comm():
    """A one-rank communicator in this process (for tests of single-process behaviour)."""
    from memloom import wholememory as wm

    wm.init(0, wm.LogLevel.FATAL)
    communicator = wm.create_communicator(wm.create_unique_id(), 0, 1)
    yield communicator
    communicator.destroy()
    wm.finalize()


@pytest.fixture(scope="module")
def wg_comm():
    """A one-rank pylibwholegraph communicator in this process, with wgth.init/finalize around it."""
    import pylibwholegraph.torch as wgth
    from memloom import wholememory as wm

    wgth.init(0, 1, 0, 1, wm_log_level="fatal")
    communicator = wgth.WholeMemoryCommunicator(
        wm.create_communicator(wm.create_unique_id(), 0, 1))
    yield communicator
    wgth.destroy_communicator(communicator)
    wgth.finalize()


def memloom_run():
    path = os.environ.get("MEMLOOM_RUN")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("MEMLOOM_RUN must name the memloom-run program (ctest sets it)")
    return path


def _launch_ports():
    """The examples' port chooser (examples/python/launch_ports.py says why ports come from below
    the ephemeral range), loaded by path: the tests and the examples share one."""
    spec = importlib.util.spec_from_file_location(
        "launch_ports", os.path.join(REPO, "examples", "python", "launch_ports.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_PORTS = _launch_ports()


def free_port():
    """A free loopback port with the one after it free too, so it can serve as MASTER_PORT
    (memloom's config store binds MASTER_PORT + 1); never the same port twice in one run."""
    return _PORTS.master_port()


def _stop(process):
    """SIGTERM to the process group, SIGKILL a second later if it is still there."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=2)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=5)


def _child_env(extra):
    env = dict(os.environ)
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    env.update({key: str(value) for key, value in (extra or {}).items()})
    return env


class Job:
    """Processes started together; stop() ends whatever is left of them."""

    def __init__(self, processes):
        self.processes = processes

    def wait(self, timeout):
        """Waits for every process and returns their outputs. The first process to fail ends the
        others, as torchrun does, so a failed rank is reported at once instead of after its
        peers have sat out their deadlines waiting for it."""
        deadline = time.monotonic() + timeout
        outputs = [""] * len(self.processes)

        def read(index, process):
            outputs[index] = process.stdout.read()

        readers = [threading.Thread(target=read, args=(index, process), daemon=True)
                   for index, process in enumerate(self.processes)]
        for reader in readers:
            reader.start()
        while any(process.poll() is None for process in self.processes):
            if any(process.poll() not in (None, 0) for process in self.processes):
                self.stop()
                break
            if time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"the job did not finish within {timeout} s")
            time.sleep(0.05)
        for reader in readers:
            reader.join(timeout=5)
        return outputs

    def stop(self):
        for process in self.processes:
            if process.poll() is None:
                _stop(process)


@pytest.fixture
def launcher():
    """Starts jobs; every job still running at the end of the test is stopped (its process
    group: memloom-run then removes the job's shared memory; ci/test.sh checks /dev/shm after
    the suite, since tests running in parallel cannot tell each other's entries apart)."""
    jobs = []

    class Launcher:
        def popen(self, argv, env=None):
            process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       text=True, env=_child_env(env), start_new_session=True,
                                       cwd=HERE)
            job = Job([process])
            jobs.append(job)
            return job

        def memloom_run(self, ranks, script, *args, nodes=1, env=None, timeout=180):
            """Runs ranks copies of a script through memloom-run; returns its output."""
            argv = [memloom_run(), "-n", str(ranks), "--nodes", str(nodes), "--timeout",
                    str(timeout), "--", sys.executable, os.path.join(RANKS, script), *args]
            job = self.popen(argv, env)
            (out,) = job.wait(timeout + 30)
            rc = job.processes[0].returncode
            assert rc == 0, f"memloom-run exited {rc}:\n{out}"
            return out

        def torchrun_style(self, ranks, script, *args, nodes=1, env=None, timeout=180):
            """Runs ranks copies with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
            MASTER_ADDR and MASTER_PORT set (and MEMLOOM_NODE per node), as torchrun does."""
            port = free_port()
            per_node = ranks // nodes
            processes = []
            for rank in range(ranks):
                rank_env = dict(env or {})
                rank_env.update(RANK=rank, WORLD_SIZE=ranks, LOCAL_RANK=rank % per_node,
                                LOCAL_WORLD_SIZE=per_node, MASTER_ADDR="127.0.0.1",
                                MASTER_PORT=port, MEMLOOM_NODE=f"node{rank // per_node}")
                processes.append(subprocess.Popen(
                    [sys.executable, os.path.join(RANKS, script), *args],
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                    env=_child_env(rank_env), start_new_session=True, cwd=HERE))
            job = Job(processes)
            jobs.append(job)
            outputs = job.wait(timeout)
            for rank, process in enumerate(processes):
                assert process.returncode == 0, (
                    f"rank {rank} exited {process.returncode}:\n" + "\n".join(
                        f"--- rank {r} ---\n{o}" for r, o in enumerate(outputs)))
            return outputs

    yield Launcher()
    for job in jobs:
        job.stop()
