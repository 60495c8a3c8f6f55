"""CUDA tensors through the Python packages on the cuda backend: views of device memory as torch
CUDA tensors without a copy, gather/scatter with CUDA index and row tensors, and an embedding's
sparse optimizer step from CUDA gradients. Runs where MEMLOOM_BACKEND=cuda and torch sees a GPU
(the GPU validation script); elsewhere every test is skipped, saying why."""

import os

import pytest
import torch

import pylibwholegraph.torch as wgth

pytestmark = pytest.mark.skipif(
    os.environ.get("MEMLOOM_BACKEND") != "cuda" or not torch.cuda.is_available(),
    reason="needs MEMLOOM_BACKEND=cuda and a torch that sees a GPU")


@pytest.mark.parametrize("memory_type", ["continuous", "chunked"])
def test_device_views_are_cuda_tensors_without_a_copy(wg_comm, memory_type):
    tensor = wgth.create_wholememory_tensor(wg_comm, memory_type, "cuda", [64, 8], torch.float32,
                                            None)
    local, start = tensor.get_local_tensor()
    assert local.is_cuda and start == 0
    local.copy_(torch.arange(64 * 8, dtype=torch.float32, device="cuda").view(64, 8))
    again, _ = tensor.get_local_tensor()
    assert again.data_ptr() == local.data_ptr(), "a second view was a copy"
    indices = torch.tensor([63, 0, 17], device="cuda")
    rows = tensor.gather(indices)
    assert rows.is_cuda
    assert torch.equal(rows, local[indices])
    del local, again
    wgth.destroy_wholememory_tensor(tensor)


def test_scatter_from_cuda_then_gather_on_host_view(wg_comm):
    tensor = wgth.create_wholememory_tensor(wg_comm, "chunked", "cuda", [32, 4], torch.float32,
                                            None)
    values = torch.randn(5, 4, device="cuda")
    indices = torch.tensor([3, 9, 31, 0, 14], device="cuda")
    tensor.scatter(values, indices)
    assert torch.equal(tensor.gather(indices), values)
    # Host-side index tensors are moved to the device by the package, as upstream's are.
    assert torch.equal(tensor.gather(indices.cpu()), values)
    wgth.destroy_wholememory_tensor(tensor)


def test_embedding_sgd_step_from_cuda_gradients(wg_comm):
    rows, dim, lr = 40, 33, 0.25
    optimizer = wgth.create_wholememory_optimizer("sgd", {})
    embedding = wgth.create_embedding(wg_comm, "chunked", "cuda", torch.float32, [rows, dim],
                                      optimizer=optimizer, random_init=True)
    everything = torch.arange(rows, device="cuda")
    reference = embedding.gather(everything).clone()
    assert reference.is_cuda
    indices = torch.tensor([1, 7, 39, 20], device="cuda")
    grads = torch.randn(4, dim, device="cuda")
    embedding.add_gradients(indices, grads)
    optimizer.step(lr)
    reference[indices] -= lr * grads
    got = embedding.gather(everything)
    assert torch.allclose(got, reference, rtol=1e-5, atol=1e-6), (got - reference).abs().max()
    wgth.destroy_embedding(embedding)


def test_graph_sampling_on_device_memory(wg_comm):
    nodes, fanout = 200, 5
    gen = torch.Generator().manual_seed(3)
    degrees = torch.randint(0, 12, (nodes,), generator=gen)
    row_ptr = torch.zeros(nodes + 1, dtype=torch.int64)
    row_ptr[1:] = torch.cumsum(degrees, 0)
    col = torch.cat([torch.randperm(nodes, generator=gen)[:d] for d in degrees.tolist()])
    tensors = []
    for values in (row_ptr, col):
        tensor = wgth.create_wholememory_tensor(wg_comm, "chunked", "cuda", [values.shape[0]],
                                                values.dtype, None)
        tensor.scatter(values.cuda(), torch.arange(values.shape[0], device="cuda"))
        tensors.append(tensor)
    graph = wgth.GraphStructure()
    graph.set_csr_graph(*tensors)
    centres = torch.arange(0, nodes, 3, device="cuda")
    offsets, sampled = graph.unweighted_sample_without_replacement_one_hop(centres, fanout,
                                                                           random_seed=11)
    assert offsets.is_cuda and sampled.is_cuda
    offsets, sampled = offsets.cpu(), sampled.cpu()
    for i, centre in enumerate(centres.cpu().tolist()):
        got = sampled[offsets[i]:offsets[i + 1]].tolist()
        real = set(col[row_ptr[centre]:row_ptr[centre + 1]].tolist())
        assert len(got) == min(fanout, len(real)) and len(set(got)) == len(got)
        assert set(got) <= real, f"centre {centre}: {got} are not all neighbours"
    del graph
    for tensor in tensors:
        wgth.destroy_wholememory_tensor(tensor)
