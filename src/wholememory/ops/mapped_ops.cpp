#include "src/wholememory/ops/mapped_ops.h"

#include <mutex>
#include <string>

#include "memloom/error.h"
#include "src/core/log.h"

namespace memloom::wholememory {

void enqueue_checked_row_copy(OpStream& stream, int device, Direction direction,
                              const ops::RowTable& source, const ops::RowTable& destination,
                              const IndexList& indices, int64_t bound, int64_t columns) {
  if (indices.count == 0) return;
  std::lock_guard<std::mutex> lock(stream.enqueue_mutex());
  BadIndexSlot& slot = stream.bad_index_slot(device);
  hal::Stream& work = stream.stream();
  // All four steps are in stream order, so one slot per stream serves every operation on it.
  work.copy(slot.device_word(), slot.host_zero(), sizeof(unsigned long long));
  enqueue_row_copy(work, direction, source, destination, indices, bound, columns,
                   slot.device_word());
  work.copy(slot.host_result(), slot.device_word(), sizeof(unsigned long long));
  const char* operation =
      direction == Direction::kGather ? "wholememory_gather" : "wholememory_scatter";
  unsigned long long* result = slot.host_result();
  work.host_function([operation, result, bound] {
    const unsigned long long seen = *result;
    if (seen == 0) return;
    const std::string message = std::string(operation) + ": index " + std::to_string(seen - 1) +
                                " is past the table's " + std::to_string(bound) +
                                " rows; its row was skipped";
    MEMLOOM_LOG(kError, message);
    raise(Status::kInvalidInput, message);
  });
}

}  // namespace memloom::wholememory
