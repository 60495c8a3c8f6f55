#include "src/wholememory/ops/distinct_entries.h"

#include <algorithm>
#include <string>

#include "memloom/error.h"

namespace memloom::wholememory {
namespace {

// Ranges up to this many times the number of keys (or up to kSmallRange) use a mark per entry.
constexpr uint64_t kDenseFactor = 4;
constexpr uint64_t kSmallRange = uint64_t{1} << 20;
constexpr int kDigitBits = 11;
constexpr size_t kBuckets = size_t{1} << kDigitBits;

DistinctEntries by_marks(const std::vector<int64_t>& keys, uint64_t range) {
  // id_of_entry[e]: -1 for an entry no key names, else its position among the distinct ones.
  std::vector<int64_t> id_of_entry(range, -1);
  for (int64_t key : keys) id_of_entry[static_cast<size_t>(key)] = 0;
  DistinctEntries distinct;
  for (uint64_t entry = 0; entry < range; ++entry) {
    if (id_of_entry[entry] < 0) continue;
    id_of_entry[entry] = static_cast<int64_t>(distinct.entries.size());
    distinct.entries.push_back(static_cast<int64_t>(entry));
  }
  distinct.of_received.resize(keys.size());
  for (size_t k = 0; k < keys.size(); ++k) {
    distinct.of_received[k] = id_of_entry[static_cast<size_t>(keys[k])];
  }
  return distinct;
}

DistinctEntries by_radix_sort(const std::vector<int64_t>& keys, uint64_t largest) {
  // Positions of the keys, sorted by key a digit at a time from the lowest (stable passes).
  std::vector<uint32_t> order(keys.size()), scratch(keys.size());
  for (size_t k = 0; k < keys.size(); ++k) order[k] = static_cast<uint32_t>(k);
  for (int shift = 0; shift < 64 && (largest >> shift) != 0; shift += kDigitBits) {
    std::vector<size_t> start(kBuckets + 1, 0);
    auto digit = [&](uint32_t position) {
      return static_cast<size_t>((static_cast<uint64_t>(keys[position]) >> shift) & (kBuckets - 1));
    };
    for (uint32_t position : order) ++start[digit(position) + 1];
    for (size_t b = 1; b <= kBuckets; ++b) start[b] += start[b - 1];
    for (uint32_t position : order) scratch[start[digit(position)]++] = position;
    order.swap(scratch);
  }
  DistinctEntries distinct;
  distinct.of_received.resize(keys.size());
  for (uint32_t position : order) {
    if (distinct.entries.empty() || distinct.entries.back() != keys[position]) {
      distinct.entries.push_back(keys[position]);
    }
    distinct.of_received[position] = static_cast<int64_t>(distinct.entries.size()) - 1;
  }
  return distinct;
}

}  // namespace

DistinctEntries distinct_entries(const std::vector<int64_t>& keys) {
  if (keys.empty()) return {};
  MEMLOOM_CHECK_ARG(keys.size() <= UINT32_MAX, "more than 2^32 keys to de-duplicate");
  int64_t largest = 0;
  for (int64_t key : keys) {
    if (key < 0) raise(Status::kLogic, "a negative entry to de-duplicate: " + std::to_string(key));
    largest = std::max(largest, key);
  }
  const uint64_t range = static_cast<uint64_t>(largest) + 1;
  if (range <= std::max<uint64_t>(kSmallRange, kDenseFactor * keys.size())) {
    return by_marks(keys, range);
  }
  return by_radix_sort(keys, static_cast<uint64_t>(largest));
}

}  // namespace memloom::wholememory
