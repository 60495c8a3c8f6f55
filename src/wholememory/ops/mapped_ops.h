// Gather and scatter over tables this process maps in full (CONTINUOUS, CHUNKED, HIERARCHY on one
// node, and tensors made from a pointer): one kernel reading or writing the table directly, fully
// asynchronous on the stream. An index past the table is found by the kernel and read back in
// stream order (bad_index_ring.h): logged when the host next looks, raised by the next synchronize
// of the stream through memloom.
#pragma once

#include "src/wholememory/ops/op_stream.h"
#include "src/wholememory/ops/row_copy_launch.h"

namespace memloom::wholememory {

void enqueue_checked_row_copy(OpStream& stream, int device, Direction direction,
                              const kernels::RowTable& source, const kernels::RowTable& destination,
                              const IndexList& indices, int64_t bound, int64_t columns);

}  // namespace memloom::wholememory
