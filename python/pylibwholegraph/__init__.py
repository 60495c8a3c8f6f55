"""pylibwholegraph on memloom: the torch layer (pylibwholegraph.torch) of NVIDIA WholeGraph, over
memloom's WholeMemory. CPU torch tensors on the emulated backend, CUDA tensors on GPUs."""

from _memloom_native import __version__  # noqa: F401
