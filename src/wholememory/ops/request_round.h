// One round of requests between the ranks of a group: every rank sends keys (int64, e.g. row
// numbers) to chosen peers, each rank then serves the keys it received, and rows travel back to
// the requesters (respond) or along with the keys (forward).
//
// BucketedRound takes keys that the caller has already grouped by destination (DISTRIBUTED and
// HIERARCHY's first stage route them on the device, device_routing.h); RequestRound groups host
// keys itself and keeps the slot each request lands in, so callers can put rows back into their
// original order. Keys and rows are passed in memory the backend's collectives accept (host memory;
// device memory too on the CUDA backend, where the emulated backend's device memory is host memory
// anyway).
#pragma once

#include <cstdint>
#include <vector>

#include "hw/hal/collectives.h"
#include "memloom/deadline.h"

namespace memloom::wholememory {

class BucketedRound {
 public:
  // Collective over `collectives`: this rank sends sent_per_rank[p] requests to rank p, and
  // learns how many each rank sends it.
  BucketedRound(hal::Collectives& collectives, std::vector<uint64_t> sent_per_rank,
                Deadline deadline);

  uint64_t sent_count() const { return sent_count_; }
  uint64_t received_count() const { return received_count_; }
  const std::vector<uint64_t>& sent_per_rank() const { return sent_per_rank_; }
  const std::vector<uint64_t>& received_per_rank() const { return received_per_rank_; }

  // Collective: `keys` holds sent_count() keys grouped by destination in rank order; `received`
  // receives received_count() keys grouped by source rank in rank order.
  void exchange_keys(const int64_t* keys, int64_t* received, Deadline deadline);
  // Collective: `served` holds one row (row_bytes) per received key, in received order; `out`
  // receives one row per sent request, in the order the keys were sent.
  void respond(const void* served, void* out, size_t row_bytes, Deadline deadline);
  // Collective: `rows` holds one row per sent request, in the order the keys were sent; `out`
  // receives one row per received key, in received order.
  void forward(const void* rows, void* out, size_t row_bytes, Deadline deadline);

 private:
  void exchange(const void* send, const std::vector<uint64_t>& send_items, void* receive,
                const std::vector<uint64_t>& receive_items, size_t item_bytes, Deadline deadline);

  hal::Collectives& collectives_;
  std::vector<uint64_t> sent_per_rank_;
  std::vector<uint64_t> received_per_rank_;
  uint64_t sent_count_ = 0;
  uint64_t received_count_ = 0;
};

class RequestRound : public BucketedRound {
 public:
  // Collective over `collectives`: request k carries keys[k] (host memory) to rank
  // destinations[k].
  RequestRound(hal::Collectives& collectives, const std::vector<int64_t>& keys,
               const std::vector<int>& destinations, Deadline deadline);

  // The keys this rank received, grouped by source rank in rank order.
  const std::vector<int64_t>& received() const { return received_; }
  // Where request k went among this rank's sent requests (its row's position in respond's output
  // and forward's input): requests are sent grouped by destination in rank order.
  const std::vector<int64_t>& slot_of_request() const { return slot_of_request_; }
  // The request sent in slot s (the inverse of slot_of_request).
  const std::vector<int64_t>& request_in_slot() const { return request_in_slot_; }

 private:
  std::vector<int64_t> received_;
  std::vector<int64_t> slot_of_request_;
  std::vector<int64_t> request_in_slot_;
};

}  // namespace memloom::wholememory
