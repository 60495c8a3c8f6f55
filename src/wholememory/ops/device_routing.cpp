#include "src/wholememory/ops/device_routing.h"

#include <string>
#include <utility>

#include "memloom/error.h"

namespace memloom::wholememory {

OwnerRoute::OwnerRoute(ExchangeWork& work, const ExchangeOperands& operands,
                       const EntryLayout& layout, const RouteTargets* targets)
    : work_(work) {
  const std::vector<int64_t>& offsets = layout.offsets();
  const size_t ranks = offsets.size() - 1;
  const IndexList& indices = operands.indices;
  size_t destinations = ranks;
  if (targets != nullptr) {
    destinations = static_cast<size_t>(targets->destinations);
    if (targets->destination_of_owner.size() != ranks || destinations == 0 ||
        destinations > ranks) {
      raise(Status::kLogic, "routing to " + std::to_string(destinations) + " destinations with " +
                                std::to_string(targets->destination_of_owner.size()) +
                                " table entries for " + std::to_string(ranks) + " ranks");
    }
    for (int64_t destination : targets->destination_of_owner) {
      if (destination < 0 || destination >= targets->destinations) {
        raise(Status::kLogic, "routing to destination " + std::to_string(destination) + " of " +
                                  std::to_string(destinations));
      }
    }
  }
  // One upload for what the count kernel reads and writes: the partitions' entry offsets, a zero
  // counter per rank (the first `destinations` are used), the first bad row (all ones: none yet),
  // then the destination table if any.
  std::vector<int64_t> state(offsets);
  state.resize(2 * ranks + 2, 0);
  state.back() = -1;
  if (targets != nullptr) {
    state.insert(state.end(), targets->destination_of_owner.begin(),
                 targets->destination_of_owner.end());
  }
  TempMemory* shared = work.upload(std::move(state));
  args_.indices = indices.data;
  args_.index_type = indices.type;
  args_.rows = indices.count;
  args_.table_rows = operands.table.rows;
  args_.first_entry = operands.table.first_entry();
  args_.entry_offsets = shared->as<int64_t>();
  args_.world_size = static_cast<int32_t>(ranks);
  args_.destination_of_owner = targets != nullptr ? shared->as<int64_t>() + 2 * ranks + 2 : nullptr;
  args_.global_keys = targets != nullptr && targets->global_keys;
  args_.per_owner = reinterpret_cast<unsigned long long*>(shared->as<int64_t>() + ranks + 1);
  args_.first_bad_row = args_.per_owner + ranks;
  if (indices.count > 0) {
    work.launch(hal::KernelId::kCountByOwner, args_, static_cast<size_t>(indices.count));
  }
  std::vector<unsigned long long> counts(ranks + 1);
  work.read_back(counts.data(), args_.per_owner, counts.size() * sizeof(counts[0]));

  sent_per_rank_.assign(counts.begin(), counts.begin() + static_cast<std::ptrdiff_t>(destinations));
  for (uint64_t count : sent_per_rank_) sent_count_ += count;
  const unsigned long long bad_row = counts[ranks];
  if (bad_row == ~0ull) return;
  if (bad_row >= static_cast<unsigned long long>(indices.count)) {
    raise(Status::kLogic, "routing found a bad index at row " + std::to_string(bad_row) +
                              " of a list of " + std::to_string(indices.count));
  }
  // The bad index itself, for the message every rank reports.
  if (indices.type == kernels::DType::kInt) {
    int32_t index = 0;
    work.read_back(&index, static_cast<const int32_t*>(indices.data) + bad_row, sizeof(index));
    first_bad_ = index;
  } else {
    work.read_back(&first_bad_, static_cast<const int64_t*>(indices.data) + bad_row,
                   sizeof(first_bad_));
  }
}

void OwnerRoute::place(bool rows_of_slots) {
  if (first_bad_ >= 0) raise(Status::kLogic, "placing a list with an index past the table");
  // Each owner's bucket starts where the previous owners' end.
  std::vector<int64_t> starts(sent_per_rank_.size());
  uint64_t start = 0;
  for (size_t r = 0; r < starts.size(); ++r) {
    starts[r] = static_cast<int64_t>(start);
    start += sent_per_rank_[r];
  }
  TempMemory* cursors = work_.upload(std::move(starts));
  keys_ = work_.device_buffer(sent_count_ * sizeof(int64_t));
  slot_of_row_ = work_.device_buffer(static_cast<size_t>(args_.rows) * sizeof(int64_t));
  if (rows_of_slots) row_in_slot_ = work_.device_buffer(sent_count_ * sizeof(int64_t));
  args_.per_owner = cursors->as<unsigned long long>();
  args_.first_bad_row = nullptr;
  args_.keys = keys_->as<int64_t>();
  args_.slot_of_row = slot_of_row_->as<int64_t>();
  args_.row_in_slot = row_in_slot_ != nullptr ? row_in_slot_->as<int64_t>() : nullptr;
  if (args_.rows > 0) {
    work_.launch(hal::KernelId::kPlaceByOwner, args_, static_cast<size_t>(args_.rows));
  }
}

}  // namespace memloom::wholememory
