/*
 * memloom's graph sampling (drop-in for WholeMemory's wholememory/wholegraph_op.h).
 *
 * The graph is a CSR: csr_row_ptr (INT or INT64, nodes + 1 entries) and csr_col_ptr (INT or
 * INT64) as WholeMemory tensors mapped in full in this process (CONTINUOUS, CHUNKED, single-node
 * HIERARCHY) or tensors made from a pointer; edge weights are FLOAT or DOUBLE. Each centre node
 * gets min(max_sample_count, degree) distinct neighbours (all of them, in CSR order, when the
 * degree is not larger, or when max_sample_count <= 0). Outputs: output_sample_offset_tensor
 * (INT, centres + 1, made from a pointer), and through p_env_fns->output_fns, one malloc per
 * non-NULL context: sampled nodes (the column type), each sample's centre position (INT) and
 * each sample's edge id (INT64). Random numbers come from a counter-based generator keyed by
 * (random_seed, centre node id, position), so a seed gives the same samples on any rank count
 * and either backend. Weighted sampling draws without replacement with probabilities
 * proportional to the weights (exponential keys, the largest k kept).
 */
#ifndef MEMLOOM_WHOLEMEMORY_WHOLEGRAPH_OP_H_
#define MEMLOOM_WHOLEMEMORY_WHOLEGRAPH_OP_H_

#include <stdint.h>
#include <wholememory/env_func_ptrs.h>
#include <wholememory/wholememory.h>
#include <wholememory/wholememory_tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

wholememory_error_code_t wholegraph_csr_unweighted_sample_without_replacement(
    wholememory_tensor_t wm_csr_row_ptr_tensor, wholememory_tensor_t wm_csr_col_ptr_tensor,
    wholememory_tensor_t center_nodes_tensor, int max_sample_count,
    wholememory_tensor_t output_sample_offset_tensor, void* output_dest_memory_context,
    void* output_center_localid_memory_context, void* output_edge_gid_memory_context,
    unsigned long long random_seed, wholememory_env_func_t* p_env_fns, void* stream);

wholememory_error_code_t wholegraph_csr_weighted_sample_without_replacement(
    wholememory_tensor_t wm_csr_row_ptr_tensor, wholememory_tensor_t wm_csr_col_ptr_tensor,
    wholememory_tensor_t wm_csr_weight_ptr_tensor, wholememory_tensor_t center_nodes_tensor,
    int max_sample_count, wholememory_tensor_t output_sample_offset_tensor,
    void* output_dest_memory_context, void* output_center_localid_memory_context,
    void* output_edge_gid_memory_context, unsigned long long random_seed,
    wholememory_env_func_t* p_env_fns, void* stream);

/* Fills a 1-D host tensor (INT or INT64, made from a pointer) with non-negative integers of the
 * generator keyed by (random_seed, subsequence, position). memloom's generator, not raft's PCG:
 * the values differ from upstream's. */
wholememory_error_code_t generate_random_positive_int_cpu(int64_t random_seed, int64_t subsequence,
                                                          wholememory_tensor_t output);

/* Fills a 1-D host FLOAT tensor with log(u), u uniform in (0, 1]: the negative of an
 * exponentially distributed value (rate 1), from the same generator. */
wholememory_error_code_t generate_exponential_distribution_negative_float_cpu(
    int64_t random_seed, int64_t subsequence, wholememory_tensor_t output);

#ifdef __cplusplus
}
#endif

#endif /* MEMLOOM_WHOLEMEMORY_WHOLEGRAPH_OP_H_ */
