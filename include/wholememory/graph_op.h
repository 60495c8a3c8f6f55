/*
 * memloom's graph operations (drop-in for WholeMemory's wholememory/graph_op.h). Tensors are made
 * from a pointer (host or device memory the stream's device reaches).
 */
#ifndef MEMLOOM_WHOLEMEMORY_GRAPH_OP_H_
#define MEMLOOM_WHOLEMEMORY_GRAPH_OP_H_

#include <wholememory/env_func_ptrs.h>
#include <wholememory/wholememory.h>
#include <wholememory/wholememory_tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Unique nodes: target_nodes (INT or INT64, distinct) in their order, then every neighbour not
 * among them in the order of first appearance; allocated through p_env_fns->output_fns with
 * output_unique_node_memory_context. The mapping (INT, optional: NULL to skip) gives each
 * neighbour's position among the unique nodes. Waits for the stream. */
wholememory_error_code_t graph_append_unique(
    wholememory_tensor_t target_nodes_tensor, wholememory_tensor_t neighbor_nodes_tensor,
    void* output_unique_node_memory_context,
    wholememory_tensor_t output_neighbor_raw_to_unique_mapping_tensor,
    wholememory_env_func_t* p_env_fns, void* stream);

/* Row r of the output holds r first, then row r of the input: output_csr_row_ptr (INT, rows + 1)
 * and output_csr_col_ptr (INT, edges + rows); input csr_row_ptr and csr_col_ptr INT. */
wholememory_error_code_t csr_add_self_loop(wholememory_tensor_t csr_row_ptr_tensor,
                                           wholememory_tensor_t csr_col_ptr_tensor,
                                           wholememory_tensor_t output_csr_row_ptr_tensor,
                                           wholememory_tensor_t output_csr_col_ptr_tensor,
                                           void* stream);

#ifdef __cplusplus
}
#endif

#endif /* MEMLOOM_WHOLEMEMORY_GRAPH_OP_H_ */
