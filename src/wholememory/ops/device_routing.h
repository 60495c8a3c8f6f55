// Routing a caller's index list to the ranks owning its entries (DISTRIBUTED gather and scatter),
// or to the ranks that forward requests for them (HIERARCHY's gateways), on the device that holds
// the list, with the kernels of src/kernels/owner_routing_kernel.h: only the
// per-rank counts and the position of the list's first bad index come back to the host; the keys
// for each owner, the slot of each row and the row of each slot stay in device memory for the key
// exchange and the row copies.
#pragma once

#include <cstdint>
#include <vector>

#include "src/kernels/owner_routing_kernel.h"
#include "src/wholememory/ops/exchange_op.h"

namespace memloom::wholememory {

// Where requests go when not to the rank owning their entry.
struct RouteTargets {
  // For each rank of the table's communicator, the destination of requests for its entries: a
  // rank of the communicator the keys travel over.
  std::vector<int64_t> destination_of_owner;
  int destinations = 0;  // ranks of that communicator
  // Keys are global entries (HIERARCHY's gateways) rather than entries in the owner's partition.
  bool global_keys = false;
};

class OwnerRoute {
 public:
  // Counts the list's rows per destination (the owning rank, or with `targets` the owner's
  // destination) and finds its first index past the table: one kernel on `work`'s stream and a
  // read-back of a few bytes (waits for the stream, also with an empty list, so an earlier failure
  // of the stream surfaces here).
  OwnerRoute(ExchangeWork& work, const ExchangeOperands& operands, const EntryLayout& layout,
             const RouteTargets* targets = nullptr);
  OwnerRoute(const OwnerRoute&) = delete;
  OwnerRoute& operator=(const OwnerRoute&) = delete;

  // The list's first index (in list order) at or past the table's rows; -1 when there is none.
  int64_t first_bad() const { return first_bad_; }
  // Requests for each destination rank, and in all.
  const std::vector<uint64_t>& sent_per_rank() const { return sent_per_rank_; }
  uint64_t sent_count() const { return sent_count_; }

  // Enqueues the placement (the stream is not waited for): keys() grouped by destination in rank
  // order,
  // slot_of_row(), and with `rows_of_slots` also row_in_slot(). Only for a list without a bad
  // index.
  void place(bool rows_of_slots);
  // sent_count() int64 keys: each request's entry in its owner's partition (global with
  // RouteTargets::global_keys).
  const TempMemory* keys() const { return keys_; }
  // One int64 per row of the list: the slot (position among sent requests) of its request, -1 for
  // a row that asks for nothing.
  const TempMemory* slot_of_row() const { return slot_of_row_; }
  // sent_count() int64: the list's row each slot carries (after place(true)).
  const TempMemory* row_in_slot() const { return row_in_slot_; }

 private:
  ExchangeWork& work_;
  kernels::OwnerRoutingArgs args_{};
  std::vector<uint64_t> sent_per_rank_;
  uint64_t sent_count_ = 0;
  int64_t first_bad_ = -1;
  TempMemory* keys_ = nullptr;
  TempMemory* slot_of_row_ = nullptr;
  TempMemory* row_in_slot_ = nullptr;
};

}  // namespace memloom::wholememory
