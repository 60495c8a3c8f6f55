#include "src/wholememory/partition_plan.h"

#include <algorithm>

#include "memloom/error.h"

namespace memloom::wholememory {
namespace {

void check_shape(size_t total_size, size_t granularity, int world_size) {
  MEMLOOM_CHECK_ARG(world_size > 0,
                    "world size must be positive, got " + std::to_string(world_size));
  if (granularity == 0) raise(Status::kInvalidValue, "data granularity must be positive");
  if (total_size % granularity != 0) {
    raise(Status::kInvalidValue, "total size " + std::to_string(total_size) +
                                     " is not a multiple of the data granularity " +
                                     std::to_string(granularity));
  }
}

}  // namespace

size_t equal_entries_per_rank(size_t total_entries, int world_size) {
  MEMLOOM_CHECK_ARG(world_size > 0,
                    "world size must be positive, got " + std::to_string(world_size));
  const auto ranks = static_cast<size_t>(world_size);
  return total_entries / ranks + (total_entries % ranks != 0 ? 1 : 0);
}

PartitionPlan PartitionPlan::equal(size_t total_size, size_t granularity, int world_size) {
  check_shape(total_size, granularity, world_size);
  const size_t entries = total_size / granularity;
  const size_t per_rank = equal_entries_per_rank(entries, world_size);
  std::vector<size_t> sizes(world_size);
  for (int r = 0; r < world_size; ++r) {
    const size_t first = std::min(static_cast<size_t>(r) * per_rank, entries);
    const size_t last = std::min(static_cast<size_t>(r + 1) * per_rank, entries);
    sizes[r] = (last - first) * granularity;
  }
  return from_sizes(std::move(sizes));
}

PartitionPlan PartitionPlan::from_entries(const size_t* entries, int world_size, size_t total_size,
                                          size_t granularity) {
  check_shape(total_size, granularity, world_size);
  MEMLOOM_CHECK_ARG(entries != nullptr, "rank_entry_partition is null");
  std::vector<size_t> sizes(world_size);
  const size_t capacity = total_size / granularity;
  size_t sum = 0;  // never above capacity, so neither the sum nor entries[r] * granularity overflow
  for (int r = 0; r < world_size; ++r) {
    if (entries[r] > capacity - sum) {
      raise(Status::kInvalidValue, "rank_entry_partition gives more entries than total size " +
                                       std::to_string(total_size) + " / granularity " +
                                       std::to_string(granularity) + " holds (at rank " +
                                       std::to_string(r) + ")");
    }
    sum += entries[r];
    sizes[r] = entries[r] * granularity;
  }
  if (sum != capacity) {
    raise(Status::kInvalidValue, "rank_entry_partition adds up to " + std::to_string(sum) +
                                     " entries but total size / granularity is " +
                                     std::to_string(capacity));
  }
  return from_sizes(std::move(sizes));
}

PartitionPlan PartitionPlan::from_sizes(std::vector<size_t> sizes) {
  PartitionPlan plan;
  plan.offsets.assign(sizes.size() + 1, 0);
  for (size_t r = 0; r < sizes.size(); ++r) plan.offsets[r + 1] = plan.offsets[r] + sizes[r];
  plan.stride = sizes.empty() ? 0 : sizes[0];
  // Equal chunks: every rank holds `stride` bytes until the total runs out (the last ones may be
  // shorter or empty), so the owner of byte o is o / stride. Decided from the sizes: a later rank
  // larger than rank 0 starts where division expects it but ends past the next rank's start.
  plan.same_chunk = plan.stride > 0;
  size_t left = plan.offsets.back();
  for (size_t r = 0; r < sizes.size() && plan.same_chunk; ++r) {
    const size_t expected = std::min(plan.stride, left);
    plan.same_chunk = sizes[r] == expected;
    left -= expected;
  }
  plan.sizes = std::move(sizes);
  return plan;
}

std::string PartitionPlan::describe() const {
  std::string text;
  for (size_t size : sizes) text += std::to_string(size) + ",";
  return text;
}

}  // namespace memloom::wholememory
