// Which bytes of an allocation each rank owns. Partitions are whole entries of data_granularity
// bytes, in rank order; the plan is the same on every rank.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace memloom::wholememory {

// ceil(total_entries / world_size): the entry count of every rank but the last ones.
size_t equal_entries_per_rank(size_t total_entries, int world_size);

struct PartitionPlan {
  std::vector<size_t> sizes;    // bytes of rank r
  std::vector<size_t> offsets;  // world_size + 1 entries; offsets[r + 1] = offsets[r] + sizes[r]
  size_t stride = 0;            // sizes[0]
  bool same_chunk = false;      // every rank holds `stride` bytes until the total runs out (the
                                // last ones may hold less or none): owner(o) = o / stride

  // The default plan. total_size must be a multiple of granularity (kInvalidValue otherwise).
  static PartitionPlan equal(size_t total_size, size_t granularity, int world_size);
  // rank r gets entries[r] entries; they must add up to total_size / granularity.
  static PartitionPlan from_entries(const size_t* entries, int world_size, size_t total_size,
                                    size_t granularity);

  size_t total() const { return offsets.back(); }
  int world_size() const { return static_cast<int>(sizes.size()); }
  // A text form for comparing plans between ranks.
  std::string describe() const;

 private:
  static PartitionPlan from_sizes(std::vector<size_t> sizes);
};

}  // namespace memloom::wholememory
