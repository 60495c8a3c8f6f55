// One round of requests between the ranks of a group: every rank sends keys (int64, e.g. row
// numbers) to chosen peers, each rank then serves the keys it received, and rows travel back to
// the requesters (respond) or along with the keys (forward). The bucketing by destination and the
// slot each request lands in are kept, so callers can put rows back into their original order.
//
// Keys travel in host memory; rows are passed in memory the backend's collectives accept (host
// memory on the emulated backend, device memory on CUDA).
#pragma once

#include <cstdint>
#include <vector>

#include "hw/hal/collectives.h"
#include "memloom/deadline.h"

namespace memloom::wholememory {

class RequestRound {
 public:
  // Collective over `collectives`: request k carries keys[k] to rank destinations[k].
  RequestRound(hal::Collectives& collectives, const std::vector<int64_t>& keys,
               const std::vector<int>& destinations, Deadline deadline);

  // The keys this rank received, grouped by source rank in rank order.
  const std::vector<int64_t>& received() const { return received_; }
  // Where request k went among this rank's sent requests (its row's position in respond's output
  // and forward's input): requests are sent grouped by destination in rank order.
  const std::vector<int64_t>& slot_of_request() const { return slot_of_request_; }
  // The request sent in slot s (the inverse of slot_of_request).
  const std::vector<int64_t>& request_in_slot() const { return request_in_slot_; }
  size_t sent_count() const { return request_in_slot_.size(); }

  // Collective: `served` holds one row (row_bytes) per received key, in received() order; `out`
  // receives one row per sent request, in slot order.
  void respond(const void* served, void* out, size_t row_bytes, Deadline deadline);
  // Collective: `rows` holds one row per sent request, in slot order; `out` receives one row per
  // received key, in received() order.
  void forward(const void* rows, void* out, size_t row_bytes, Deadline deadline);

 private:
  void exchange_rows(const void* send, const std::vector<uint64_t>& send_rows, void* receive,
                     const std::vector<uint64_t>& receive_rows, size_t row_bytes,
                     Deadline deadline);

  hal::Collectives& collectives_;
  std::vector<uint64_t> sent_per_rank_;
  std::vector<uint64_t> received_per_rank_;
  std::vector<int64_t> received_;
  std::vector<int64_t> slot_of_request_;
  std::vector<int64_t> request_in_slot_;
};

}  // namespace memloom::wholememory
