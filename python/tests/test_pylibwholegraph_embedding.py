"""pylibwholegraph.torch embeddings in one process: each optimizer against a dense torch
reference, the module's backward updating rows, cache policies and bad input."""

import pytest
import torch

import pylibwholegraph.torch as wgth



@pytest.mark.parametrize("dim", [1, 33])
@pytest.mark.parametrize("kind", ["sgd", "adagrad"])
def test_optimizer_against_dense_reference(wg_comm, kind, dim):
    rows, lr, eps = 50, 0.1, 1e-8
    optimizer = wgth.create_wholememory_optimizer(kind, {} if kind == "sgd" else {"epsilon": eps})
    embedding = wgth.create_embedding(wg_comm, "chunked", "cpu", torch.float32, [rows, dim],
                                      optimizer=optimizer, random_init=True)
    reference = embedding.gather(torch.arange(rows))
    state = torch.zeros_like(reference)
    gen = torch.Generator().manual_seed(dim)
    for _ in range(4):
        indices = torch.randperm(rows, generator=gen)[:20]
        grads = torch.randn(20, dim, generator=gen)
        embedding.add_gradients(indices, grads)
        optimizer.step(lr)
        if kind == "sgd":
            reference[indices] -= lr * grads
        else:
            state[indices] += grads * grads
            reference[indices] -= lr * grads / (state[indices].sqrt() + eps)
    got = embedding.gather(torch.arange(rows))
    assert torch.allclose(got, reference, rtol=1e-5, atol=1e-6), (got - reference).abs().max()
    wgth.destroy_embedding(embedding)


def test_module_backward_updates_rows(wg_comm):
    optimizer = wgth.create_wholememory_optimizer("sgd", {})
    embedding = wgth.create_embedding(wg_comm, "chunked", "cpu", torch.float32, [10, 4],
                                      optimizer=optimizer)
    module = wgth.WholeMemoryEmbeddingModule(embedding)
    out = module(torch.tensor([1, 3]))
    out.sum().backward()
    optimizer.step(0.5)
    rows = embedding.gather(torch.arange(10))
    assert torch.equal(rows[1], torch.full([4], -0.5)) and torch.equal(rows[3], rows[1])
    assert torch.count_nonzero(rows[[0, 2, 4, 5, 6, 7, 8, 9]]) == 0
    wgth.destroy_embedding(embedding)


def test_cache_policy_and_bad_input(wg_comm):
    policy = wgth.create_wholememory_cache_policy(wg_comm, memory_type="chunked",
                                                  memory_location="cpu", ratio=0.5)
    assert policy.wmb_cache_policy is not None
    assert wgth.create_builtin_cache_policy("none", "chunked", "cpu", "readonly", 0.5) is None
    with pytest.raises(ValueError, match="optimizer type"):
        wgth.create_wholememory_optimizer("lamb", {})
    with pytest.raises(RuntimeError):
        wgth.create_wholememory_optimizer("sgd", {"no_such_parameter": 1.0})
    with pytest.raises(ValueError, match="rows, dim"):
        wgth.create_embedding(wg_comm, "chunked", "cpu", torch.float32, [10])
    with pytest.raises(RuntimeError, match="cache_ratio"):
        wgth.create_wholememory_cache_policy(wg_comm, memory_location="cpu", ratio=2.0)
