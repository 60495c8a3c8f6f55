/*
 * memloom: WholeMemory tensor descriptions (drop-in for wholememory/tensor_description.h).
 * Sizes, strides and offsets are counted in elements, never bytes; dimension 0 changes slowest.
 */
#pragma once

#include <stdint.h>
#include <stdlib.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

enum wholememory_dtype_t {
  WHOLEMEMORY_DT_UNKNOWN = 0,
  WHOLEMEMORY_DT_FLOAT,  /* 32-bit float */
  WHOLEMEMORY_DT_HALF,   /* 16-bit IEEE half */
  WHOLEMEMORY_DT_DOUBLE, /* 64-bit float */
  WHOLEMEMORY_DT_BF16,   /* 16-bit bfloat16 */
  WHOLEMEMORY_DT_INT,    /* 32-bit signed integer */
  WHOLEMEMORY_DT_INT64,  /* 64-bit signed integer */
  WHOLEMEMORY_DT_INT16,  /* 16-bit signed integer */
  WHOLEMEMORY_DT_INT8,   /* 8-bit signed integer */
  WHOLEMEMORY_DT_COUNT,  /* number of types */
};
#ifndef __cplusplus
typedef enum wholememory_dtype_t wholememory_dtype_t;
#endif

/* Element size in bytes; (size_t)-1 for an invalid dtype. */
size_t wholememory_dtype_get_element_size(wholememory_dtype_t dtype);
bool wholememory_dtype_is_floating_number(wholememory_dtype_t dtype);
bool wholememory_dtype_is_integer_number(wholememory_dtype_t dtype);

struct wholememory_array_description_t {
  int64_t size;           /* elements */
  int64_t storage_offset; /* elements from the data pointer to the first element */
  wholememory_dtype_t dtype;
};

struct wholememory_matrix_description_t {
  int64_t sizes[2];       /* sizes[0] rows, sizes[1] columns */
  int64_t stride;         /* elements between the starts of consecutive rows */
  int64_t storage_offset; /* elements */
  wholememory_dtype_t dtype;
};

#define WHOLEMEMORY_MAX_TENSOR_DIM (8)

struct wholememory_tensor_description_t {
  int64_t sizes[WHOLEMEMORY_MAX_TENSOR_DIM];
  int64_t strides[WHOLEMEMORY_MAX_TENSOR_DIM];
  int64_t storage_offset;
  int dim;
  wholememory_dtype_t dtype;
};

#ifndef __cplusplus
typedef struct wholememory_array_description_t wholememory_array_description_t;
typedef struct wholememory_matrix_description_t wholememory_matrix_description_t;
typedef struct wholememory_tensor_description_t wholememory_tensor_description_t;
#endif

wholememory_array_description_t wholememory_create_array_desc(int64_t size, int64_t storage_offset,
                                                              wholememory_dtype_t dtype);
wholememory_matrix_description_t wholememory_create_matrix_desc(int64_t sizes[2], int64_t stride,
                                                                int64_t storage_offset,
                                                                wholememory_dtype_t dtype);
/* Sets sizes and strides to 1, storage_offset and dim to 0, dtype to UNKNOWN. */
void wholememory_initialize_tensor_desc(wholememory_tensor_description_t* p_tensor_description);
void wholememory_copy_array_desc_to_matrix(wholememory_matrix_description_t* p_matrix_description,
                                           wholememory_array_description_t* p_array_description);
void wholememory_copy_array_desc_to_tensor(wholememory_tensor_description_t* p_tensor_description,
                                           wholememory_array_description_t* p_array_description);
void wholememory_copy_matrix_desc_to_tensor(wholememory_tensor_description_t* p_tensor_description,
                                            wholememory_matrix_description_t* p_matrix_description);
/* Return false when the tensor is not 1-D (resp. not 1-D/2-D with unit inner stride). */
bool wholememory_convert_tensor_desc_to_array(
    wholememory_array_description_t* p_array_description,
    wholememory_tensor_description_t* p_tensor_description);
bool wholememory_convert_tensor_desc_to_matrix(
    wholememory_matrix_description_t* p_matrix_description,
    wholememory_tensor_description_t* p_tensor_description);
int64_t wholememory_get_memory_element_count_from_array(
    wholememory_array_description_t* p_array_description);
int64_t wholememory_get_memory_size_from_array(
    wholememory_array_description_t* p_array_description);
int64_t wholememory_get_memory_element_count_from_matrix(
    wholememory_matrix_description_t* p_matrix_description);
int64_t wholememory_get_memory_size_from_matrix(
    wholememory_matrix_description_t* p_matrix_description);
int64_t wholememory_get_memory_element_count_from_tensor(
    wholememory_tensor_description_t* p_tensor_description);
int64_t wholememory_get_memory_size_from_tensor(
    wholememory_tensor_description_t* p_tensor_description);
/* Remove a size-1 dimension / insert one; false when dim is out of range (or not of size 1). */
bool wholememory_squeeze_tensor(wholememory_tensor_description_t* p_tensor_description, int dim);
bool wholememory_unsqueeze_tensor(wholememory_tensor_description_t* p_tensor_description, int dim);

#ifdef __cplusplus
}
#endif
