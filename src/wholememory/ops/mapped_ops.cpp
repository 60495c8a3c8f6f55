#include "src/wholememory/ops/mapped_ops.h"

#include <mutex>

#include "src/core/group.h"

namespace memloom::wholememory {

void enqueue_checked_row_copy(OpStream& stream, int device, Direction direction,
                              const kernels::RowTable& source, const kernels::RowTable& destination,
                              const IndexList& indices, int64_t bound, int64_t columns) {
  if (indices.count == 0) return;
  std::lock_guard<std::mutex> lock(stream.enqueue_mutex());
  BadIndexRing& ring = stream.bad_index_ring(device);
  hal::Stream& work = stream.stream();
  const char* operation =
      direction == Direction::kGather ? "wholememory_gather" : "wholememory_scatter";
  unsigned long long* bad_index =
      ring.begin(work, operation, bound, Deadline::after(core::default_collective_timeout()));
  enqueue_row_copy(work, direction, source, destination, indices, bound, columns, bad_index);
  ring.end(work);
}

}  // namespace memloom::wholememory
