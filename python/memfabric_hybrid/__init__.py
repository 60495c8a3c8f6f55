"""memfabric_hybrid on memloom: a drop-in for MemFabric Hybrid's Python package.

Names, arguments, defaults and return conventions follow upstream's doc/pythonAPI.md and its
bindings (pymf_hybrid, pytransfer): calls return the C API's codes, get_last_err_msg() explains
them, and the calls upstream raises RuntimeError for raise it here too. Buffers are integer
addresses as upstream; objects with the buffer protocol or __dlpack__ (numpy arrays, torch
tensors) are accepted as well, and are checked to be large enough.
"""

import sys as _sys

from _memloom_native import __version__
from _memloom_native.smem import (
    TransferEngine,
    TransferOpcode,
    bm,
    create_config_store,
    get_and_clear_last_err_msg,
    get_last_err_msg,
    initialize,
    set_conf_store_tls,
    set_conf_store_tls_key,
    set_extern_logger,
    set_log_level,
    shm,
    uninitialize,
)

# `import memfabric_hybrid.bm` as well as `from memfabric_hybrid import bm`.
_sys.modules[__name__ + ".bm"] = bm
_sys.modules[__name__ + ".shm"] = shm

__all__ = [
    "TransferEngine", "TransferOpcode", "create_config_store", "bm", "shm", "initialize",
    "uninitialize", "set_log_level", "set_extern_logger", "get_last_err_msg",
    "set_conf_store_tls", "set_conf_store_tls_key", "get_and_clear_last_err_msg",
]
