// The gateway's de-duplication against a plain sort + unique + binary search, on dense key ranges
// (one mark per entry), sparse and huge ones (radix sort), and the edges: no keys, one key, all
// keys alike, the largest entries, a negative key.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "memloom/error.h"
#include "src/wholememory/ops/distinct_entries.h"

namespace memloom::wholememory {
namespace {

DistinctEntries reference(const std::vector<int64_t>& keys) {
  DistinctEntries expected;
  expected.entries = keys;
  std::sort(expected.entries.begin(), expected.entries.end());
  expected.entries.erase(std::unique(expected.entries.begin(), expected.entries.end()),
                         expected.entries.end());
  for (int64_t key : keys) {
    expected.of_received.push_back(
        std::lower_bound(expected.entries.begin(), expected.entries.end(), key) -
        expected.entries.begin());
  }
  return expected;
}

void expect_like_reference(const std::vector<int64_t>& keys, const char* what) {
  const DistinctEntries got = distinct_entries(keys);
  const DistinctEntries expected = reference(keys);
  EXPECT_EQ(got.entries, expected.entries) << what;
  EXPECT_EQ(got.of_received, expected.of_received) << what;
}

std::vector<int64_t> random_keys(size_t count, int64_t bound, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> pick(0, bound - 1);
  std::vector<int64_t> keys(count);
  for (auto& key : keys) key = pick(rng);
  return keys;
}

TEST(DistinctEntries, DenseRangesMatchTheReference) {
  expect_like_reference(random_keys(100000, 1000, 1), "many duplicates");
  expect_like_reference(random_keys(100000, 300000, 2), "range 3x the keys");
  expect_like_reference(random_keys(10, 1 << 20, 3), "few keys in the small-range allowance");
  expect_like_reference(random_keys(100000, 3000000, 7), "range 30x the keys");
  // Entries on both sides of the 64-entry words the marks are counted in.
  expect_like_reference({127, 0, 64, 63, 65, 128, 1, 63, 191, 192, 4095, 4096}, "word edges");
}

TEST(DistinctEntries, SparseAndHugeRangesMatchTheReference) {
  expect_like_reference(random_keys(50000, int64_t{1} << 30, 4), "30-bit entries");
  expect_like_reference(random_keys(50000, int64_t{1} << 40, 5), "40-bit entries");
  std::vector<int64_t> huge = random_keys(20000, INT64_MAX, 6);
  huge.push_back(INT64_MAX);
  huge.push_back(0);
  huge.push_back(INT64_MAX);
  expect_like_reference(huge, "the whole int64 range");
}

TEST(DistinctEntries, EdgeCases) {
  expect_like_reference({}, "no keys");
  expect_like_reference({7}, "one key");
  expect_like_reference(std::vector<int64_t>(1000, 42), "all alike");
  expect_like_reference({int64_t{1} << 50, 3, int64_t{1} << 50, 3}, "two far apart");
  try {
    distinct_entries({1, -1});
    ADD_FAILURE() << "a negative key was accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::kLogic);
  }
}

}  // namespace
}  // namespace memloom::wholememory
