"""pylibwholegraph.torch on memloom: communicators, WholeMemory tensors, set-up, launching,
embeddings with sparse optimizers and cache policies, and GraphStructure with neighbour sampling
(wholegraph_ops, graph_ops.append_unique). The GNN models and data loaders are not part of this
package yet (see README's status table)."""

from .comm import (
    WholeMemoryCommunicator,
    create_group_communicator,
    destroy_communicator,
    get_global_communicator,
    get_local_device_communicator,
    get_local_mnnvl_communicator,
    get_local_node_communicator,
    split_communicator,
)
from .distributed_launch import (
    add_distributed_launch_options,
    distributed_launch,
    get_local_rank,
    get_local_size,
    get_rank,
    get_world_size,
)
from .initialize import (
    finalize,
    init,
    init_torch_env,
    init_torch_env_and_create_wm_comm,
    is_rmm_enabled,
)
from .tensor import (
    WholeMemoryTensor,
    create_wholememory_tensor,
    create_wholememory_tensor_from_filelist,
    destroy_wholememory_tensor,
)
from .graph_structure import GraphStructure
from .utils import get_part_file_list, get_part_file_name
from .embedding import (
    WholeMemoryCachePolicy,
    WholeMemoryEmbedding,
    WholeMemoryEmbeddingModule,
    WholeMemoryOptimizer,
    create_builtin_cache_policy,
    create_embedding,
    create_embedding_from_filelist,
    create_wholememory_cache_policy,
    create_wholememory_optimizer,
    destroy_embedding,
)
