// wholememory/device_reference.cuh compiled as C++: element access through a global reference,
// continuous and chunked, equal chunks and caller-given uneven ones, and over real allocations of
// host memory (which the host can read on every backend).
#include <wholememory/device_reference.cuh>

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tests/wholememory/wm_test_support.h"

namespace memloom::wmtest {
namespace {

// A chunked reference over host arrays of `entries[r]` ints each, element e holding e * 10.
struct HostChunks {
  std::vector<std::vector<int>> chunks;
  std::vector<void*> pointers;
  std::vector<size_t> offsets{0};
  wholememory_gref_t gref{};

  HostChunks(const std::vector<size_t>& entries, bool same_chunk) {
    int next = 0;
    for (size_t count : entries) {
      chunks.emplace_back(count);
      for (auto& value : chunks.back()) value = 10 * next++;
      offsets.push_back(offsets.back() + count * sizeof(int));
    }
    for (auto& chunk : chunks) pointers.push_back(chunk.empty() ? nullptr : chunk.data());
    gref.pointer = pointers.data();
    gref.rank_memory_offsets = offsets.data();
    gref.world_size = static_cast<int>(entries.size());
    gref.stride = entries[0] * sizeof(int);
    gref.same_chunk = same_chunk;
  }
  size_t total() const { return offsets.back() / sizeof(int); }
};

TEST(DeviceReference, FindsTheOwnerOfEveryElement) {
  for (const auto& [entries, same_chunk] : std::vector<std::pair<std::vector<size_t>, bool>>{
           {{4, 4, 2}, true},
           {{4, 4, 0, 0}, true},
           {{3, 5, 0, 2}, false},
           {{5, 7}, false},
           {{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9}, false}}) {
    HostChunks chunks(entries, same_chunk);
    wholememory::device_reference<int> table(chunks.gref);
    for (size_t e = 0; e < chunks.total(); ++e) {
      EXPECT_EQ(static_cast<int>(10 * e), table[e]) << "element " << e << " of " << chunks.total();
    }
    table[chunks.total() - 1] = -1;  // a reference: writes land in the owner's chunk
    const auto last = std::find_if(chunks.chunks.rbegin(), chunks.chunks.rend(),
                                   [](const std::vector<int>& chunk) { return !chunk.empty(); });
    EXPECT_EQ(-1, last->back());
  }
}

TEST(DeviceReference, ContinuousReferenceIndexesItsPointer) {
  std::vector<double> values = {1.5, 2.5, 3.5};
  wholememory::device_reference<double> table(
      wholememory_create_continuous_global_reference(values.data()));
  EXPECT_EQ(2.5, table[1]);
  table[2] = 9.0;
  EXPECT_EQ(9.0, values[2]);
}

TEST(DeviceReference, ReadsHostAllocationsOfEveryRank) {
  auto results =
      run_with_comm(ranks_on_nodes(3, 1), [](const testing::RankContext&, wholememory_comm_t comm) {
        const size_t total = 3 * 4000 + 8;
        size_t uneven[3] = {1000, 4002, 7006};  // in entries of 1 byte
        for (auto type : {WHOLEMEMORY_MT_CONTINUOUS, WHOLEMEMORY_MT_CHUNKED}) {
          for (size_t* partition : {static_cast<size_t*>(nullptr), uneven}) {
            wholememory_handle_t handle = nullptr;
            WM_ASSERT_OK(
                wholememory_malloc(&handle, total, comm, type, WHOLEMEMORY_ML_HOST, 1, partition));
            fill_local_partition(handle, 5);
            WM_ASSERT_OK(wholememory_communicator_barrier(comm));
            wholememory_gref_t gref{};
            WM_ASSERT_OK(wholememory_get_global_reference(&gref, handle));
            wholememory::device_reference<uint8_t> table(gref);
            size_t mismatches = 0;
            for (size_t b = 0; b < total; ++b) mismatches += table[b] != pattern_byte(b, 5);
            EXPECT_EQ(0u, mismatches) << "type " << type << (partition ? ", uneven" : ", equal");
            WM_ASSERT_OK(wholememory_communicator_barrier(comm));
            WM_ASSERT_OK(wholememory_free(handle));
          }
        }
      });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::wmtest
