/*
 * memloom's WholeMemory operations (drop-in for WholeMemory's wholememory/wholememory_op.h):
 * gather rows of a table by index, and scatter rows into it.
 *
 * The table is a 1-D or 2-D tensor, usually a WholeMemory tensor (any memory type and location,
 * sub-tensors included); indices are a 1-D INT or INT64 tensor made from a pointer; the other
 * matrix (output of gather, input of scatter) is made from a pointer, has one row per index and
 * the table's columns, and may have its own row stride, storage offset and element type as long
 * as both types are floating (FLOAT, HALF, DOUBLE, BF16) or both integer (INT, INT64, INT16,
 * INT8); values are converted on the way. A negative index skips its row (gather leaves that
 * output row as it was; scatter writes nothing). Scatter with one row index given twice stores
 * one of the rows.
 *
 * `stream` is a cudaStream_t on the CUDA backend and a stream from memloom_stream_create
 * (memloom/stream.h) on either backend; NULL is the default stream. CONTINUOUS and CHUNKED tables
 * (and HIERARCHY ones on a single node) are read and written through their mappings,
 * asynchronously on the stream: an index past the table is then reported, with the error logged,
 * by the next memloom_stream_synchronize of that stream, and the rows of valid indices are still
 * copied. DISTRIBUTED and multi-node HIERARCHY tables exchange indices and rows with the other
 * ranks: those calls are collective over the table's communicator, finish their work before
 * returning, and return WHOLEMEMORY_INVALID_INPUT on every rank when any rank passed an index past
 * the table. gather_sms / scatter_sms (-1: all) are accepted for compatibility; memloom sizes its
 * launches itself.
 *
 * p_env_fns provides temporary memory (NULL: get_default_env_func()).
 */
#ifndef MEMLOOM_WHOLEMEMORY_WHOLEMEMORY_OP_H_
#define MEMLOOM_WHOLEMEMORY_WHOLEMEMORY_OP_H_

#include <wholememory/env_func_ptrs.h>
#include <wholememory/wholememory.h>
#include <wholememory/wholememory_tensor.h>

#ifdef __cplusplus
#define WHOLEMEMORY_OP_DEFAULT_ARG(value) = value
extern "C" {
#else
#define WHOLEMEMORY_OP_DEFAULT_ARG(value)
#endif

/* output[i] = table[indices[i]] for every i. */
wholememory_error_code_t wholememory_gather(wholememory_tensor_t wholememory_tensor,
                                            wholememory_tensor_t indices_tensor,
                                            wholememory_tensor_t output_tensor,
                                            wholememory_env_func_t* p_env_fns, void* stream,
                                            int gather_sms WHOLEMEMORY_OP_DEFAULT_ARG(-1));

/* table[indices[i]] = input[i] for every i. */
wholememory_error_code_t wholememory_scatter(wholememory_tensor_t input_tensor,
                                             wholememory_tensor_t indices_tensor,
                                             wholememory_tensor_t wholememory_tensor,
                                             wholememory_env_func_t* p_env_fns, void* stream,
                                             int scatter_sms WHOLEMEMORY_OP_DEFAULT_ARG(-1));

/* A check of a set of environment functions, as upstream's tests and bindings use it: row i of
 * the result is T(i) + input (T: the input's dtype, i counted from 0) for
 * output_variable_entry_count rows of input's 1-D length. The result goes to output_fixed_tensor
 * (2-D, output_variable_entry_count x input length, same dtype) and, for each non-NULL
 * output_variable_*_tensor_handle, to memory that p_env_fns->output_fns.malloc_fn allocates into
 * that context (device, pinned and host memory respectively) with output_fixed_tensor's
 * description. p_env_fns NULL: memloom's defaults. Returns once every output holds the result. */
wholememory_error_code_t wholememory_env_test_op(wholememory_tensor_t input_tensor,
                                                 wholememory_tensor_t output_fixed_tensor,
                                                 void* output_variable_device_tensor_handle,
                                                 void* output_variable_pinned_tensor_handle,
                                                 void* output_variable_host_tensor_handle,
                                                 int64_t output_variable_entry_count,
                                                 wholememory_env_func_t* p_env_fns, void* stream);

#ifdef __cplusplus
}
#endif

#undef WHOLEMEMORY_OP_DEFAULT_ARG

#endif /* MEMLOOM_WHOLEMEMORY_WHOLEMEMORY_OP_H_ */
