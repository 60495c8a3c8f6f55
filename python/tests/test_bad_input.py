"""The bad-input table's Python rows: wrong types, None, freed objects, buffers too small.
Each raises a clean Python error (or returns upstream's failure code, in the drop-in package)
with a message; none may crash the interpreter."""

import gc

import numpy as np
import pytest
import torch

import memfabric_hybrid as mf
from memfabric_hybrid import TransferEngine, bm, shm
from memloom import wholememory as wm

UINT32_MAX = 2**32 - 1


@pytest.fixture
def table(comm):
    tensor = wm.create_tensor(comm, (32, 4), np.float32)
    yield tensor
    if not tensor.destroyed:
        gc.collect()
        tensor.destroy(force=True)


@pytest.mark.parametrize("unique_id,error", [
    (None, TypeError), ("text", TypeError), (b"short", ValueError), (bytearray(128), TypeError)])
def test_bad_unique_ids(unique_id, error):
    with pytest.raises(error):
        wm.create_communicator(unique_id, 0, 1)


def test_bad_tensor_arguments(comm):
    with pytest.raises(TypeError, match="Communicator"):
        wm.create_tensor("comm", (4, 4), np.float32)
    with pytest.raises(ValueError, match="1-D or 2-D"):
        wm.create_tensor(comm, (2, 2, 2), np.float32)
    with pytest.raises(TypeError, match="dtype"):
        wm.create_tensor(comm, (4,), np.uint32)
    with pytest.raises(TypeError):
        wm.create_tensor(comm, None, np.float32)


@pytest.mark.parametrize("indices,output,error", [
    (None, np.zeros((1, 4), np.float32), TypeError),
    (np.zeros(1, np.int64), None, TypeError),
    (12345, np.zeros((1, 4), np.float32), TypeError),          # an address is no array
    (np.zeros((1, 1), np.int64), np.zeros((1, 4), np.float32), ValueError),  # 2-D indices
    (np.zeros(1, np.uint32), np.zeros((1, 4), np.float32), TypeError),       # no such dtype
    (np.zeros(1, np.int64), np.zeros((1, 4), np.float32)[:, :0], wm.WholeMemoryError),
    (np.zeros(2, np.int64), np.zeros((1, 4), np.float32), wm.WholeMemoryError),  # too small
    (np.array([99], np.int64), np.zeros((1, 4), np.float32), wm.WholeMemoryError),  # past end
    (np.zeros(1, np.float32), np.zeros((1, 4), np.float32), wm.WholeMemoryError),
    (np.zeros(1, np.int64), np.zeros((1, 4), np.int32), wm.WholeMemoryError),  # float vs int
])
def test_bad_gathers(table, indices, output, error):
    with pytest.raises(error) as raised:
        table.gather(indices, output)
    assert str(raised.value)


def test_read_only_output_is_refused(table):
    output = np.zeros((1, 4), np.float32)
    output.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        table.gather(np.zeros(1, np.int64), output)


def test_freed_objects_raise(comm):
    tensor = wm.create_tensor(comm, (4, 4), np.float32)
    tensor.destroy()
    for call in (tensor.local_view, lambda: tensor.shape, tensor.destroy,
                 lambda: tensor.gather(np.zeros(1, np.int64), np.zeros((1, 4), np.float32))):
        with pytest.raises(wm.WholeMemoryError, match="destroyed") as raised:
            call()
        assert raised.value.code_name == "INVALID_INPUT"
    other = wm.create_communicator(wm.create_unique_id(), 0, 1)
    other.destroy()
    with pytest.raises(wm.WholeMemoryError, match="destroyed"):
        other.barrier()


def test_bad_files(table, tmp_path):
    with pytest.raises(ValueError, match="empty"):
        table.load_from_file([])
    with pytest.raises(wm.WholeMemoryError) as raised:
        table.load_from_file([str(tmp_path / "missing")])
    assert "missing" in str(raised.value)


def test_drop_in_calls_before_initialize_return_codes():
    assert bm.bm_rank_id() == UINT32_MAX
    with pytest.raises(RuntimeError, match="create bm handle failed"):
        bm.create(0, 2 << 20, 2 << 20)
    with pytest.raises(RuntimeError, match="create shm failed"):
        shm.create(0, 1, 0, 2 << 20)
    engine = TransferEngine()
    mf.get_and_clear_last_err_msg()
    assert engine.transfer_sync_write("127.0.0.1:1", 4096, 4096, 8) != 0
    # Keywords take the checked binding instead of the fast path: same result.
    assert engine.transfer_sync_write(dest_session="127.0.0.1:1", buffer=4096,
                                      peer_buffer=4096, length=8) != 0
    with pytest.raises(TypeError):
        engine.transfer_sync_write("127.0.0.1:1", 4096, 4096)
    assert mf.get_last_err_msg() != ""
    assert mf.get_and_clear_last_err_msg() != ""
    assert mf.get_last_err_msg() == ""
    assert engine.register_memory(4096, 4096) != 0
    assert engine.batch_transfer_sync_write("127.0.0.1:1", [1, 2], [3], [4, 5]) == -1


@pytest.mark.parametrize("dest,buffer,length,error", [
    (None, 4096, 8, TypeError),
    (b"127.0.0.1:1", 4096, 8, TypeError),
    ("127.0.0.1:1", None, 8, TypeError),
    ("127.0.0.1:1", -5, 8, ValueError),
    ("127.0.0.1:1", "text", 8, TypeError),
    ("127.0.0.1:1", np.zeros(4, np.uint8), 8, ValueError),          # buffer too small
    ("127.0.0.1:1", np.zeros((4, 4), np.uint8)[:, 0], 4, ValueError),  # not contiguous
    ("127.0.0.1:1", torch.zeros(2), 64, ValueError),                 # torch buffer too small
])
def test_bad_transfer_arguments(dest, buffer, length, error):
    with pytest.raises(error):
        TransferEngine().transfer_sync_write(dest, buffer, 4096, length)


def test_bad_configs_and_callbacks():
    config = bm.BmConfig()
    with pytest.raises(TypeError):
        config.init_timeout = "soon"
    with pytest.raises(ValueError, match="nic"):
        config.set_nic("x" * 100)
    with pytest.raises(TypeError):
        shm.ShmConfig().init_timeout = -1  # no negative timeouts
    with pytest.raises(TypeError, match="callable"):
        mf.set_extern_logger(5)
    with pytest.raises(TypeError, match="callable"):
        mf.set_conf_store_tls_key("key", "password", 5)
