// Tensor description helpers of the WholeMemory API. Pure functions on small structs: they
// validate what they can and report failure through their return value, as published.
#include "wholememory/tensor_description.h"

namespace {

bool valid_dtype(wholememory_dtype_t dtype) {
  return dtype > WHOLEMEMORY_DT_UNKNOWN && dtype < WHOLEMEMORY_DT_COUNT;
}

}  // namespace

extern "C" {

size_t wholememory_dtype_get_element_size(wholememory_dtype_t dtype) {
  switch (dtype) {
    case WHOLEMEMORY_DT_UNKNOWN:
      return 0;
    case WHOLEMEMORY_DT_INT8:
      return 1;
    case WHOLEMEMORY_DT_INT16:
    case WHOLEMEMORY_DT_HALF:
    case WHOLEMEMORY_DT_BF16:
      return 2;
    case WHOLEMEMORY_DT_INT:
    case WHOLEMEMORY_DT_FLOAT:
      return 4;
    case WHOLEMEMORY_DT_INT64:
    case WHOLEMEMORY_DT_DOUBLE:
      return 8;
    default:
      return static_cast<size_t>(-1);
  }
}

bool wholememory_dtype_is_floating_number(wholememory_dtype_t dtype) {
  return dtype == WHOLEMEMORY_DT_FLOAT || dtype == WHOLEMEMORY_DT_HALF ||
         dtype == WHOLEMEMORY_DT_DOUBLE || dtype == WHOLEMEMORY_DT_BF16;
}

bool wholememory_dtype_is_integer_number(wholememory_dtype_t dtype) {
  return dtype == WHOLEMEMORY_DT_INT || dtype == WHOLEMEMORY_DT_INT64 ||
         dtype == WHOLEMEMORY_DT_INT16 || dtype == WHOLEMEMORY_DT_INT8;
}

wholememory_array_description_t wholememory_create_array_desc(int64_t size, int64_t storage_offset,
                                                              wholememory_dtype_t dtype) {
  wholememory_array_description_t desc;
  desc.size = size;
  desc.storage_offset = storage_offset;
  desc.dtype = dtype;
  return desc;
}

wholememory_matrix_description_t wholememory_create_matrix_desc(int64_t sizes[2], int64_t stride,
                                                                int64_t storage_offset,
                                                                wholememory_dtype_t dtype) {
  wholememory_matrix_description_t desc;
  desc.sizes[0] = sizes != nullptr ? sizes[0] : 0;
  desc.sizes[1] = sizes != nullptr ? sizes[1] : 0;
  desc.stride = stride;
  desc.storage_offset = storage_offset;
  desc.dtype = dtype;
  return desc;
}

void wholememory_initialize_tensor_desc(wholememory_tensor_description_t* desc) {
  if (desc == nullptr) return;
  for (int i = 0; i < WHOLEMEMORY_MAX_TENSOR_DIM; ++i) {
    desc->sizes[i] = 1;
    desc->strides[i] = 1;
  }
  desc->storage_offset = 0;
  desc->dim = 0;
  desc->dtype = WHOLEMEMORY_DT_UNKNOWN;
}

void wholememory_copy_array_desc_to_matrix(wholememory_matrix_description_t* matrix,
                                           wholememory_array_description_t* array) {
  if (matrix == nullptr || array == nullptr) return;
  matrix->sizes[0] = array->size;
  matrix->sizes[1] = 1;
  matrix->stride = 1;
  matrix->storage_offset = array->storage_offset;
  matrix->dtype = array->dtype;
}

void wholememory_copy_array_desc_to_tensor(wholememory_tensor_description_t* tensor,
                                           wholememory_array_description_t* array) {
  if (tensor == nullptr || array == nullptr) return;
  wholememory_initialize_tensor_desc(tensor);
  tensor->dim = 1;
  tensor->sizes[0] = array->size;
  tensor->strides[0] = 1;
  tensor->storage_offset = array->storage_offset;
  tensor->dtype = array->dtype;
}

void wholememory_copy_matrix_desc_to_tensor(wholememory_tensor_description_t* tensor,
                                            wholememory_matrix_description_t* matrix) {
  if (tensor == nullptr || matrix == nullptr) return;
  wholememory_initialize_tensor_desc(tensor);
  tensor->dim = 2;
  tensor->sizes[0] = matrix->sizes[0];
  tensor->sizes[1] = matrix->sizes[1];
  tensor->strides[0] = matrix->stride;
  tensor->strides[1] = 1;
  tensor->storage_offset = matrix->storage_offset;
  tensor->dtype = matrix->dtype;
}

bool wholememory_convert_tensor_desc_to_array(wholememory_array_description_t* array,
                                              wholememory_tensor_description_t* tensor) {
  if (array == nullptr || tensor == nullptr || !valid_dtype(tensor->dtype) || tensor->dim != 1 ||
      tensor->strides[0] != 1)
    return false;
  array->size = tensor->sizes[0];
  array->storage_offset = tensor->storage_offset;
  array->dtype = tensor->dtype;
  return true;
}

bool wholememory_convert_tensor_desc_to_matrix(wholememory_matrix_description_t* matrix,
                                               wholememory_tensor_description_t* tensor) {
  if (matrix == nullptr || tensor == nullptr || !valid_dtype(tensor->dtype)) return false;
  if (tensor->dim == 2) {
    if (tensor->strides[1] != 1) return false;
    matrix->sizes[0] = tensor->sizes[0];
    matrix->sizes[1] = tensor->sizes[1];
    matrix->stride = tensor->strides[0];
  } else if (tensor->dim == 1) {
    if (tensor->strides[0] != 1) return false;
    matrix->sizes[0] = tensor->sizes[0];
    matrix->sizes[1] = 1;
    matrix->stride = 1;
  } else {
    return false;
  }
  matrix->storage_offset = tensor->storage_offset;
  matrix->dtype = tensor->dtype;
  return true;
}

int64_t wholememory_get_memory_element_count_from_array(wholememory_array_description_t* array) {
  return array == nullptr ? 0 : array->size;
}

int64_t wholememory_get_memory_size_from_array(wholememory_array_description_t* array) {
  if (array == nullptr || !valid_dtype(array->dtype)) return 0;
  return array->size * static_cast<int64_t>(wholememory_dtype_get_element_size(array->dtype));
}

// A matrix occupies rows x stride elements: its storage includes the padding of every row.
int64_t wholememory_get_memory_element_count_from_matrix(wholememory_matrix_description_t* matrix) {
  return matrix == nullptr ? 0 : matrix->sizes[0] * matrix->stride;
}

int64_t wholememory_get_memory_size_from_matrix(wholememory_matrix_description_t* matrix) {
  if (matrix == nullptr || !valid_dtype(matrix->dtype)) return 0;
  return wholememory_get_memory_element_count_from_matrix(matrix) *
         static_cast<int64_t>(wholememory_dtype_get_element_size(matrix->dtype));
}

// The storage of a tensor spans sizes[0] steps of its outermost stride (padding included); a 0-D
// tensor is one element, and a dim outside [0, WHOLEMEMORY_MAX_TENSOR_DIM] has no count (-1).
int64_t wholememory_get_memory_element_count_from_tensor(wholememory_tensor_description_t* tensor) {
  if (tensor == nullptr) return 0;
  if (tensor->dim == 0) return 1;
  if (tensor->dim < 0 || tensor->dim > WHOLEMEMORY_MAX_TENSOR_DIM) return -1;
  return tensor->sizes[0] * tensor->strides[0];
}

int64_t wholememory_get_memory_size_from_tensor(wholememory_tensor_description_t* tensor) {
  if (tensor == nullptr || !valid_dtype(tensor->dtype)) return 0;
  const int64_t count = wholememory_get_memory_element_count_from_tensor(tensor);
  if (count < 0) return 0;
  return count * static_cast<int64_t>(wholememory_dtype_get_element_size(tensor->dtype));
}

bool wholememory_squeeze_tensor(wholememory_tensor_description_t* tensor, int dim) {
  if (tensor == nullptr || dim < 0 || dim >= tensor->dim || tensor->sizes[dim] != 1) return false;
  // As upstream: an inner size-1 dimension squeezes only when its stride equals the next one's.
  if (dim != tensor->dim - 1 && tensor->strides[dim] != tensor->strides[dim + 1]) return false;
  for (int i = dim; i < tensor->dim - 1; ++i) {
    tensor->sizes[i] = tensor->sizes[i + 1];
    tensor->strides[i] = tensor->strides[i + 1];
  }
  tensor->sizes[tensor->dim - 1] = 1;
  tensor->strides[tensor->dim - 1] = 1;
  --tensor->dim;
  return true;
}

bool wholememory_unsqueeze_tensor(wholememory_tensor_description_t* tensor, int dim) {
  if (tensor == nullptr || dim < 0 || dim > tensor->dim ||
      tensor->dim >= WHOLEMEMORY_MAX_TENSOR_DIM) {
    return false;
  }
  for (int i = tensor->dim; i > dim; --i) {
    tensor->sizes[i] = tensor->sizes[i - 1];
    tensor->strides[i] = tensor->strides[i - 1];
  }
  tensor->sizes[dim] = 1;
  // The new dimension spans the rest of the tensor, so its stride is that of the next outer one.
  tensor->strides[dim] = dim < tensor->dim ? tensor->strides[dim + 1] * tensor->sizes[dim + 1] : 1;
  ++tensor->dim;
  return true;
}

}  // extern "C"
