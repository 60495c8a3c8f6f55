// A gradient apply's requests grouped by row on the caller's stream
// (kernels/row_grouping_kernel.h), so neither the indices nor the groups cross to the host: each
// distinct local row once, in ascending order, with the positions of its gradients in request
// order.
#pragma once

#include <cstdint>

#include "src/wholememory/embedding/stream_work.h"

namespace memloom::wholememory {

// Requests in device memory: keys (local rows; outside [0, rows) none) and gradient positions.
struct DeviceRequests {
  int64_t* keys = nullptr;
  int64_t* positions = nullptr;
  int64_t count = 0;
};

// Groups in device memory, as OptimizerApplyArgs takes them (rows, first, positions).
struct DeviceRowGroups {
  const int64_t* rows = nullptr;
  const int64_t* first = nullptr;
  const int64_t* positions = nullptr;
};

// The requests of the caller's own list when every row is local (a one-rank communicator):
// request i is row indices[i] with position -1 - i. The list position of the first index at or
// past `rows` is stored at *first_bad (which must hold ~0), on the stream.
DeviceRequests enqueue_index_requests(StreamWork& work, const LocalArray& indices, int64_t rows,
                                      unsigned long long* first_bad);

// Enqueues the grouping of `requests`, keys below `key_limit`; the number of groups is stored at
// *group_count (device memory) on the stream. No requests: nothing is enqueued, and *group_count
// keeps the 0 the caller put there.
DeviceRowGroups enqueue_row_grouping(StreamWork& work, const DeviceRequests& requests,
                                     int64_t key_limit, unsigned long long* group_count);

}  // namespace memloom::wholememory
