/*
 * memloom's WholeMemory tensors (drop-in for WholeMemory's wholememory/wholememory_tensor.h).
 *
 * A tensor is a description (sizes, strides and storage offset in elements, dimension 0 slowest)
 * over either a WholeMemory allocation (a "WholeMemory tensor", rows spread over the ranks) or
 * memory this process owns (made from a pointer). Tables are 1-D or 2-D: a 2-D table's rows are
 * its entries, a 1-D table's elements are. Sub-tensors share the memory of their root tensor.
 *
 * Handles are checked: a destroyed or garbage handle gives WHOLEMEMORY_INVALID_INPUT (or NULL /
 * 0 from the functions returning a value), never a crash. Functions marked "collective" must be
 * called by every rank of the communicator.
 */
#ifndef MEMLOOM_WHOLEMEMORY_WHOLEMEMORY_TENSOR_H_
#define MEMLOOM_WHOLEMEMORY_WHOLEMEMORY_TENSOR_H_

#include <wholememory/tensor_description.h>
#include <wholememory/wholememory.h>

#ifdef __cplusplus
#define WHOLEMEMORY_TENSOR_DEFAULT_ARG(value) = value
extern "C" {
#else
#define WHOLEMEMORY_TENSOR_DEFAULT_ARG(value)
#endif

typedef struct wholememory_tensor_* wholememory_tensor_t;

/* Collective: allocates a 1-D or 2-D tensor (unit inner stride, storage_offset 0) of
 * sizes[0] entries of strides[0] elements (2-D) or of one element (1-D) over comm. Rank r gets
 * tensor_entry_partition[r] entries when the array is given (world_size entries), else the equal
 * plan. A bad description on one rank fails every rank. */
wholememory_error_code_t wholememory_create_tensor(
    wholememory_tensor_t* wholememory_tensor, wholememory_tensor_description_t* tensor_description,
    wholememory_comm_t comm, wholememory_memory_type_t memory_type,
    wholememory_memory_location_t memory_location,
    size_t* tensor_entry_partition WHOLEMEMORY_TENSOR_DEFAULT_ARG(NULL));

/* Collective for a tensor made by wholememory_create_tensor (it frees the allocation, as
 * wholememory_free does: after the operations using it); local for every other tensor. Tensors
 * sharing a freed allocation stay registered and fail every use of its memory with
 * WHOLEMEMORY_INVALID_INPUT until destroyed. */
wholememory_error_code_t wholememory_destroy_tensor(wholememory_tensor_t wholememory_tensor);

/* A tensor over memory the caller owns and keeps alive; storage_ptr is the start of the storage,
 * the data starts storage_offset elements after it. Sizes are not negative, the innermost stride
 * is 1 and each stride covers the dimension inside it (strides[0] >= sizes[1] for a 2-D tensor),
 * else WHOLEMEMORY_INVALID_INPUT. */
wholememory_error_code_t wholememory_make_tensor_from_pointer(
    wholememory_tensor_t* wholememory_tensor, void* storage_ptr,
    wholememory_tensor_description_t* tensor_description);

/* A 1-D or 2-D tensor over an existing allocation (which the tensor does not free). */
wholememory_error_code_t wholememory_make_tensor_from_handle(
    wholememory_tensor_t* wholememory_tensor, wholememory_handle_t wholememory_handle,
    wholememory_tensor_description_t* tensor_description);

bool wholememory_tensor_has_handle(wholememory_tensor_t wholememory_tensor);
/* NULL for a tensor made from a pointer. */
wholememory_handle_t wholememory_tensor_get_memory_handle(wholememory_tensor_t wholememory_tensor);

/* Points into the tensor; valid until the tensor is destroyed. NULL for an invalid handle. */
wholememory_tensor_description_t* wholememory_tensor_get_tensor_description(
    wholememory_tensor_t wholememory_tensor);

/* The allocation's global reference, or a continuous one over a tensor made from a pointer. */
wholememory_error_code_t wholememory_tensor_get_global_reference(
    wholememory_tensor_t wholememory_tensor, wholememory_gref_t* wholememory_gref);

/* The entries this rank holds, as a tensor made from a pointer (destroy it when done). The
 * tensor must not start after its root's first entry (1-D: storage_offset 0; 2-D:
 * storage_offset + sizes[1] <= strides[0]). */
wholememory_error_code_t wholememory_tensor_map_local_tensor(
    wholememory_tensor_t wholememory_tensor, wholememory_tensor_t* local_tensor);

/* The first element: for a tensor made from a pointer, or over CONTINUOUS memory; else NULL. */
void* wholememory_tensor_get_data_pointer(wholememory_tensor_t wholememory_tensor);

/* Entries (rows of a 2-D tensor, elements of a 1-D one) of each rank: world_size + 1 offsets,
 * world_size sizes; a tensor made from a pointer counts as one rank holding everything. */
wholememory_error_code_t wholememory_tensor_get_entry_offsets(
    size_t* entry_offsets, wholememory_tensor_t wholememory_tensor);
wholememory_error_code_t wholememory_tensor_get_entry_partition_sizes(
    size_t* entry_partition, wholememory_tensor_t wholememory_tensor);
wholememory_error_code_t wholememory_tensor_get_local_entry_count(
    size_t* local_entry_count, wholememory_tensor_t wholememory_tensor);
wholememory_error_code_t wholememory_tensor_get_local_entry_start(
    size_t* local_entry_start, wholememory_tensor_t wholememory_tensor);

/* The part [starts[i], ends[i]) of each dimension i (-1: the whole dimension) as a new tensor
 * sharing the memory (destroy it when done; it does not free the memory). */
wholememory_error_code_t wholememory_tensor_get_subtensor(
    wholememory_tensor_t wholememory_tensor, int64_t* starts, int64_t* ends,
    wholememory_tensor_t* sub_wholememory_tensor);

/* The tensor this one was cut from (itself when it is not a sub-tensor). */
wholememory_tensor_t wholememory_tensor_get_root(wholememory_tensor_t wholememory_tensor);

/* Tensors alive in this process (a debugging aid, as published). */
int64_t get_wholememory_tensor_count(void);

#ifdef __cplusplus
}
#endif

#undef WHOLEMEMORY_TENSOR_DEFAULT_ARG

#endif /* MEMLOOM_WHOLEMEMORY_WHOLEMEMORY_TENSOR_H_ */
