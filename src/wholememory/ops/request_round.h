// One round of requests between the ranks of a group: every rank sends keys (int64, e.g. row
// numbers) to chosen peers, each rank then serves the keys it received, and rows travel back to
// the requesters (respond) or along with the keys (forward).
//
// BucketedRound takes keys that the caller has already grouped by destination (DISTRIBUTED routes
// them on the device, device_routing.h); RequestRound groups host keys itself and keeps the slot
// each request lands in, so callers can put rows back into their original order. Keys and rows
// are passed in memory the backend's collectives accept (host memory; device memory too on the
// CUDA backend, where the emulated backend's device memory is host memory anyway).
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

// The requests of a caller's index list: request k asks rank destinations[k] for keys[k] and
// stands for row row_of_request[k] of the list. Negative indices ask for nothing; the first index
// past the table is kept to be reported.
struct RowRequests {
  std::vector<int64_t> keys;
  std::vector<int> destinations;
  std::vector<int64_t> row_of_request;
  int64_t first_bad = -1;

  // For each of the list's `rows`, the slot of `round` holding its answer (-1: no request).
  std::vector<int64_t> slot_of_row(const RequestRound& round, size_t rows) const;
  // For each slot `round` sent, the list's row it carries.
  std::vector<int64_t> row_in_slot(const RequestRound& round) const;
};

// Routes `indices` into a table of `table_rows` rows starting at entry `first_entry`:
// route(entry, &key, &destination) says where the request for a global entry goes.
template <class Route>
RowRequests route_rows(const std::vector<int64_t>& indices, int64_t table_rows, int64_t first_entry,
                       Route&& route) {
  RowRequests requests;
  for (size_t row = 0; row < indices.size(); ++row) {
    const int64_t index = indices[row];
    if (index < 0) continue;
    if (index >= table_rows) {
      if (requests.first_bad < 0) requests.first_bad = index;
      continue;
    }
    int64_t key = 0;
    int destination = 0;
    route(first_entry + index, &key, &destination);
    requests.keys.push_back(key);
    requests.destinations.push_back(destination);
    requests.row_of_request.push_back(static_cast<int64_t>(row));
  }
  return requests;
}

}  // namespace memloom::wholememory
