#include "src/wholememory/ops/request_round.h"

#include <string>
#include <utility>

#include "memloom/error.h"

namespace memloom::wholememory {
namespace {

// Byte counts and displacements of an alltoallv moving rows[p] items of `item_bytes` per peer.
struct Layout {
  std::vector<size_t> counts;
  std::vector<size_t> displacements;
};

Layout layout_of(const std::vector<uint64_t>& rows, size_t item_bytes) {
  Layout layout;
  size_t position = 0;
  for (uint64_t count : rows) {
    layout.counts.push_back(count * item_bytes);
    layout.displacements.push_back(position);
    position += count * item_bytes;
  }
  return layout;
}

// How many of `destinations` name each of the `ranks` ranks.
std::vector<uint64_t> requests_per_rank(const std::vector<int64_t>& keys,
                                        const std::vector<int>& destinations, int ranks) {
  MEMLOOM_CHECK_ARG(keys.size() == destinations.size(), "one destination per key");
  std::vector<uint64_t> per_rank(ranks, 0);
  for (int destination : destinations) {
    if (destination < 0 || destination >= ranks) {
      raise(Status::kLogic,
            "request for rank " + std::to_string(destination) + " of " + std::to_string(ranks));
    }
    ++per_rank[destination];
  }
  return per_rank;
}

}  // namespace

BucketedRound::BucketedRound(hal::Collectives& collectives, std::vector<uint64_t> sent_per_rank,
                             Deadline deadline)
    : collectives_(collectives), sent_per_rank_(std::move(sent_per_rank)) {
  const int ranks = collectives.size();
  if (sent_per_rank_.size() != static_cast<size_t>(ranks)) {
    raise(Status::kLogic, "request counts for " + std::to_string(sent_per_rank_.size()) +
                              " ranks in a group of " + std::to_string(ranks));
  }
  received_per_rank_.assign(ranks, 0);
  const Layout one_each = layout_of(std::vector<uint64_t>(ranks, 1), sizeof(uint64_t));
  collectives_.alltoallv(sent_per_rank_.data(), one_each.counts.data(),
                         one_each.displacements.data(), received_per_rank_.data(),
                         one_each.counts.data(), one_each.displacements.data(), deadline);
  for (uint64_t count : sent_per_rank_) sent_count_ += count;
  for (uint64_t count : received_per_rank_) received_count_ += count;
}

void BucketedRound::exchange_keys(const int64_t* keys, int64_t* received, Deadline deadline) {
  exchange(keys, sent_per_rank_, received, received_per_rank_, sizeof(int64_t), deadline);
}

void BucketedRound::exchange(const void* send, const std::vector<uint64_t>& send_items,
                             void* receive, const std::vector<uint64_t>& receive_items,
                             size_t item_bytes, Deadline deadline) {
  const Layout out = layout_of(send_items, item_bytes);
  const Layout in = layout_of(receive_items, item_bytes);
  collectives_.alltoallv(send, out.counts.data(), out.displacements.data(), receive,
                         in.counts.data(), in.displacements.data(), deadline);
}

void BucketedRound::respond(const void* served, void* out, size_t row_bytes, Deadline deadline) {
  exchange(served, received_per_rank_, out, sent_per_rank_, row_bytes, deadline);
}

void BucketedRound::forward(const void* rows, void* out, size_t row_bytes, Deadline deadline) {
  exchange(rows, sent_per_rank_, out, received_per_rank_, row_bytes, deadline);
}

RequestRound::RequestRound(hal::Collectives& collectives, const std::vector<int64_t>& keys,
                           const std::vector<int>& destinations, Deadline deadline)
    : BucketedRound(collectives, requests_per_rank(keys, destinations, collectives.size()),
                    deadline) {
  // Counting sort by destination, stable, so slots keep the callers' order within a peer.
  const int ranks = collectives.size();
  std::vector<uint64_t> next(ranks, 0);
  for (int r = 1; r < ranks; ++r) next[r] = next[r - 1] + sent_per_rank()[r - 1];
  slot_of_request_.resize(keys.size());
  request_in_slot_.resize(keys.size());
  std::vector<int64_t> sorted_keys(keys.size());
  for (size_t k = 0; k < keys.size(); ++k) {
    const uint64_t slot = next[destinations[k]]++;
    slot_of_request_[k] = static_cast<int64_t>(slot);
    request_in_slot_[slot] = static_cast<int64_t>(k);
    sorted_keys[slot] = keys[k];
  }
  received_.resize(received_count());
  exchange_keys(sorted_keys.data(), received_.data(), deadline);
}

}  // namespace memloom::wholememory
