// The distinct entries among the keys a HIERARCHY gateway received (global entries of a table,
// never negative), and which distinct entry each key is: the gateway asks other nodes for each
// entry once however many of its node's rows want it.
//
// Over a million keys a comparison sort with a binary search per key took the gateway 190-470 ms
// on the 2-core development VM. Here, when the keys' range is not much larger than their number
// (up to 32 times), a bit per possible entry with per-word counts gives the answer in linear
// passes; otherwise a radix sort of (key, position) pairs over the keys' significant bits does.
#pragma once

#include <cstdint>
#include <vector>

namespace memloom::wholememory {

struct DistinctEntries {
  std::vector<int64_t> entries;      // ascending, each once
  std::vector<int64_t> of_received;  // for each key, its entry's position in `entries`
};

// `keys` must not be negative (checked: kLogic).
DistinctEntries distinct_entries(const std::vector<int64_t>& keys);

}  // namespace memloom::wholememory
