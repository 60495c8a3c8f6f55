"""memloom: one memory fabric over many processes, GPUs and hosts.

- memloom.wholememory: WholeMemory communicators and partitioned tensors, with zero-copy numpy /
  DLPack views, gather/scatter and file I/O; C errors raise memloom.WholeMemoryError.
- memloom.Stream: ordered asynchronous work on either backend (memloom/stream.h).
- The drop-in packages memfabric_hybrid and pylibwholegraph.torch run over the same library.
"""

from _memloom_native import Stream, View, __version__
from _memloom_native.wholememory import WholeMemoryError

from . import wholememory

__all__ = ["Stream", "View", "WholeMemoryError", "__version__", "wholememory"]
