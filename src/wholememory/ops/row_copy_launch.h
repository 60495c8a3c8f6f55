// Launching the gather and scatter kernels (src/kernels/row_copy_kernel.h) on a stream: describing
// each side as an kernels::RowTable and choosing how much of a row one work item copies.
#pragma once

#include <cstdint>

#include "hw/hal/stream.h"
#include "src/kernels/row_copy_kernel.h"
#include "src/wholememory/tensor/tensor.h"
#include "wholememory/global_reference.h"

namespace memloom::wholememory {

kernels::DType to_op_dtype(wholememory_dtype_t dtype);

// A matrix whose element (0, 0) is `shape.offset` elements after `base`.
kernels::RowTable contiguous_table(void* base, const MatrixShape& shape);
// A matrix of rows packed back to back (stride = columns, offset 0), e.g. an exchange buffer.
kernels::RowTable packed_table(void* base, int64_t columns, wholememory_dtype_t dtype);
// A matrix over a CHUNKED global reference.
kernels::RowTable chunked_table(const wholememory_gref_t& gref, const MatrixShape& shape);

struct IndexList {
  const void* data = nullptr;  // readable by kernels of the stream's device
  kernels::DType type = kernels::DType::kInt64;
  int64_t count = 0;
};

enum class Direction { kGather, kScatter };

// Enqueues one kernel: gather copies source row indices[i] to destination row i, scatter source
// row i to destination row indices[i]. `bound` is the row count of the indexed side; indices at
// or past it are recorded in *bad_index (device memory) and skipped, negative ones skipped.
void enqueue_row_copy(hal::Stream& stream, Direction direction, const kernels::RowTable& source,
                      const kernels::RowTable& destination, const IndexList& indices, int64_t bound,
                      int64_t columns, unsigned long long* bad_index);

}  // namespace memloom::wholememory
