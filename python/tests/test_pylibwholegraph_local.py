"""pylibwholegraph.torch in one process: init / finalize without torch.distributed, and its
bad-input rows (unknown names, bad shapes and strides, freed tensors)."""

import pytest
import torch

import pylibwholegraph.torch as wgth
from memloom import wholememory as wm


def test_a_tensor_without_torch_distributed(wg_comm):
    tensor = wgth.create_wholememory_tensor(wg_comm, "chunked", "cpu", [16], torch.int64, None)
    local, start = tensor.get_local_tensor(host_view=True)
    local.copy_(torch.arange(16) * 3)
    del local
    assert start == 0 and tensor.gather(torch.tensor([5, 1])).tolist() == [15, 3]
    wgth.destroy_wholememory_tensor(tensor)
    assert tensor.wmb_tensor is None
    wgth.destroy_wholememory_tensor(tensor)  # a second destroy does nothing, as upstream


@pytest.mark.parametrize("memory_type,location,sizes,strides,error", [
    ("contiguous", "cpu", [4, 4], None, ValueError),   # a misspelt memory type
    ("chunked", "gpu", [4, 4], None, ValueError),
    ("chunked", "cpu", [2, 2, 2], None, ValueError),
    ("chunked", "cpu", [4, 4], [2, 1], ValueError),    # rows overlap
    ("chunked", "cpu", [4, 4], [4, 2], ValueError),    # no unit inner stride
])
def test_bad_tensor_arguments(wg_comm, memory_type, location, sizes, strides, error):
    with pytest.raises(error):
        wgth.create_wholememory_tensor(wg_comm, memory_type, location, sizes, torch.float32,
                                       strides)


def test_bad_dtypes_files_and_indices(wg_comm, tmp_path):
    with pytest.raises(ValueError, match="dtype"):
        wgth.create_wholememory_tensor(wg_comm, "chunked", "cpu", [4], torch.uint8, None)
    with pytest.raises(ValueError, match="last_dim_size"):
        wgth.create_wholememory_tensor_from_filelist(wg_comm, "chunked", "cpu",
                                                     [str(tmp_path / "x")], torch.float32)
    odd = tmp_path / "odd.bin"
    odd.write_bytes(b"12345")
    with pytest.raises(ValueError, match="not multiple"):
        wgth.create_wholememory_tensor_from_filelist(wg_comm, "chunked", "cpu", [str(odd)],
                                                     torch.float32, 0)
    with pytest.raises(ValueError, match="parquet"):
        wgth.create_wholememory_tensor_from_filelist(wg_comm, "chunked", "cpu", [str(odd)],
                                                     torch.float32, 0, file_format="parquet")
    tensor = wgth.create_wholememory_tensor(wg_comm, "chunked", "cpu", [8, 2], torch.float32,
                                            None)
    with pytest.raises(ValueError, match="1-D"):
        tensor.gather(torch.zeros((2, 2), dtype=torch.int64))
    with pytest.raises(ValueError, match="columns"):
        tensor.scatter(torch.zeros((2, 3)), torch.tensor([0, 1]))
    with pytest.raises(wm.WholeMemoryError):
        tensor.gather(torch.tensor([100]))
    wgth.destroy_wholememory_tensor(tensor)
