"""Zero-copy views both ways: memloom memory to numpy and torch (both DLPack generations, the
buffer of __array_interface__), and numpy / torch memory into memloom's gather and scatter."""

import ctypes
import gc

import numpy as np
import pytest
import torch
import torch.utils.dlpack

from memloom import wholememory as wm

_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.restype = ctypes.c_int
_capsule_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]


@pytest.fixture
def table(comm):
    tensor = wm.create_tensor(comm, (64, 16), np.float32)
    np.asarray(tensor.local_view())[:] = np.arange(64 * 16, dtype=np.float32).reshape(64, 16)
    yield tensor
    gc.collect()
    tensor.destroy(force=True)


def test_views_share_the_tensor_memory(table):
    view = table.local_view()
    assert view.__dlpack_device__() == (1, 0)  # kDLCPU on the emulated backend
    as_numpy = np.asarray(view)
    from_dlpack_numpy = np.from_dlpack(table.local_view())
    as_torch = torch.from_dlpack(table.local_view())
    legacy_torch = torch.utils.dlpack.from_dlpack(table.local_view().__dlpack__())
    addresses = {view.ptr, as_numpy.__array_interface__["data"][0],
                 from_dlpack_numpy.__array_interface__["data"][0], as_torch.data_ptr(),
                 legacy_torch.data_ptr()}
    assert len(addresses) == 1, f"a view was copied: {addresses}"
    as_torch[5, 3] = -1.0
    assert as_numpy[5, 3] == -1.0 and legacy_torch[5, 3] == -1.0


def test_versioned_and_legacy_capsules(table):
    view = table.local_view()
    legacy = view.__dlpack__()
    assert _capsule_is_valid(legacy, b"dltensor") == 1
    versioned = view.__dlpack__(max_version=(1, 0))
    assert _capsule_is_valid(versioned, b"dltensor_versioned") == 1
    old_consumer = view.__dlpack__(max_version=(0, 8))
    assert _capsule_is_valid(old_consumer, b"dltensor") == 1
    # The full array-API signature, as numpy 2 / torch 2 call it.
    full = view.__dlpack__(stream=None, max_version=(1, 1), dl_device=(1, 0), copy=False)
    assert _capsule_is_valid(full, b"dltensor_versioned") == 1


def test_refusals_are_buffer_errors(table):
    view = table.local_view()
    with pytest.raises(BufferError, match="zero-copy"):
        view.__dlpack__(copy=True)
    with pytest.raises(BufferError, match="another device"):
        view.__dlpack__(dl_device=(2, 0))
    with pytest.raises(TypeError):
        view.__dlpack__(None)  # keyword-only, as the standard says


def test_capsules_and_arrays_keep_the_tensor_alive(comm):
    tensor = wm.create_tensor(comm, (8, 4), np.int64)
    array = torch.from_dlpack(tensor.local_view())
    capsule = tensor.local_view().__dlpack__(max_version=(1, 0))
    gc.collect()
    assert tensor.live_views == 2
    with pytest.raises(wm.WholeMemoryError, match="view") as refused:
        tensor.destroy()
    assert refused.value.code_name == "INVALID_INPUT"
    array[:] = 7  # still valid memory: the refusal freed nothing
    del array, capsule
    gc.collect()
    assert tensor.live_views == 0
    tensor.destroy()


def test_gather_and_scatter_take_numpy_and_torch(table):
    indices = np.array([63, 0, 17, 17], dtype=np.int64)
    expected = np.arange(64 * 16, dtype=np.float32).reshape(64, 16)[indices]
    assert np.array_equal(wm.gather(table, indices), expected)
    out = torch.empty((4, 16), dtype=torch.float32)
    table.gather(torch.from_numpy(indices.astype(np.int32)), out)
    assert torch.equal(out, torch.from_numpy(expected))
    # Output of another floating type: converted by the gather.
    as_double = np.empty((4, 16), dtype=np.float64)
    table.gather(indices, as_double)
    assert np.array_equal(as_double, expected.astype(np.float64))
    table.scatter(torch.full((2, 16), 2.5), torch.tensor([1, 2]))
    assert np.all(wm.gather(table, np.array([1, 2], dtype=np.int64)) == 2.5)
