// Loading allocations from files and storing partitions to files: round trips on one and two
// nodes, round robin, several files, file entries narrower than memory entries, and the cases that
// must fail on every rank.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/wholememory/wm_test_support.h"

namespace memloom::wmtest {
namespace {

// Reads my whole partition into host memory.
std::vector<uint8_t> local_bytes(wholememory_handle_t handle) {
  void* local = nullptr;
  size_t size = 0;
  EXPECT_EQ(WHOLEMEMORY_SUCCESS, wholememory_get_local_memory(&local, &size, nullptr, handle));
  std::vector<uint8_t> bytes(size);
  if (size > 0) read_memory(bytes.data(), local, size);
  return bytes;
}

struct RoundTripCase {
  int ranks;
  int nodes;
  wholememory_memory_type_t type;
  wholememory_memory_location_t location;
};

class FileRoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(FileRoundTrip, StoredPartitionsLoadBackIntoANewAllocation) {
  const auto c = GetParam();
  TempDir dir;
  auto results = run_with_comm(ranks_on_nodes(c.ranks, c.nodes), [&](const testing::RankContext& me,
                                                                     wholememory_comm_t comm) {
    const size_t entry = 24, entries = 53 * c.ranks + 3;
    wholememory_handle_t source = nullptr, copy = nullptr;
    WM_ASSERT_OK(wholememory_malloc(&source, entries * entry, comm, c.type, c.location, entry));
    fill_local_partition(source, 11);
    const std::string mine = dir.file("part" + std::to_string(me.rank));
    WM_ASSERT_OK(wholememory_store_to_file(source, 0, entry, entry, mine.c_str()));
    size_t local_size = 0, local_offset = 0;
    WM_ASSERT_OK(wholememory_get_local_memory(nullptr, &local_size, &local_offset, source));
    EXPECT_EQ(pattern(local_offset, local_size, 11), read_file(mine));

    std::vector<std::string> names;
    for (int r = 0; r < c.ranks; ++r) names.push_back(dir.file("part" + std::to_string(r)));
    std::vector<const char*> files;
    for (const auto& name : names) files.push_back(name.c_str());
    WM_ASSERT_OK(wholememory_malloc(&copy, entries * entry, comm, c.type, c.location, entry));
    WM_ASSERT_OK(wholememory_load_from_file(copy, 0, entry, entry, files.data(),
                                            static_cast<int>(files.size()), 0));
    EXPECT_EQ(pattern(local_offset, local_size, 11), local_bytes(copy));
    WM_ASSERT_OK(wholememory_free(copy));
    WM_ASSERT_OK(wholememory_free(source));
  });
  EXPECT_ALL_RANKS_PASS(results);
}

INSTANTIATE_TEST_SUITE_P(
    WholeMemory, FileRoundTrip,
    ::testing::Values(RoundTripCase{1, 1, WHOLEMEMORY_MT_CONTINUOUS, WHOLEMEMORY_ML_HOST},
                      RoundTripCase{4, 1, WHOLEMEMORY_MT_CHUNKED, WHOLEMEMORY_ML_DEVICE},
                      RoundTripCase{4, 1, WHOLEMEMORY_MT_DISTRIBUTED, WHOLEMEMORY_ML_HOST},
                      RoundTripCase{4, 2, WHOLEMEMORY_MT_HIERARCHY, WHOLEMEMORY_ML_DEVICE},
                      RoundTripCase{8, 2, WHOLEMEMORY_MT_DISTRIBUTED, WHOLEMEMORY_ML_DEVICE}),
    [](const ::testing::TestParamInfo<RoundTripCase>& info) {
      return "Type" + std::to_string(info.param.type) + "Location" +
             std::to_string(info.param.location) + "_" + std::to_string(info.param.ranks) +
             "ranks" + std::to_string(info.param.nodes) + "nodes";
    });

// File entry i of the concatenated input: 8 bytes, each pattern_byte(i * 8 + k, seed).
std::vector<uint8_t> entries_bytes(size_t first, size_t count, size_t entry_size, uint8_t seed) {
  return pattern(first * entry_size, count * entry_size, seed);
}

TEST(WholeMemoryFiles, RoundRobinDealsBlocksOfEntriesToRanksInTurn) {
  TempDir dir;
  const size_t entry = 16, file_entries = 45, round_robin = 3, ranks = 4;
  write_file(dir.file("a"), entries_bytes(0, 20, entry, 5));
  write_file(dir.file("b"), entries_bytes(20, 25, entry, 5));
  auto results = run_with_comm(
      ranks_on_nodes(ranks, 2), [&](const testing::RankContext& me, wholememory_comm_t comm) {
        // 48 memory entries: 12 per rank; the deal gives at most 12 to any rank.
        wholememory_handle_t handle = nullptr;
        WM_ASSERT_OK(wholememory_malloc(&handle, 48 * entry, comm, WHOLEMEMORY_MT_DISTRIBUTED,
                                        WHOLEMEMORY_ML_DEVICE, entry));
        const std::string a = dir.file("a"), b = dir.file("b");
        const char* files[] = {a.c_str(), b.c_str()};
        WM_ASSERT_OK(wholememory_load_from_file(handle, 0, entry, entry, files, 2, round_robin));
        const auto bytes = local_bytes(handle);
        size_t local = 0;
        for (size_t block = me.rank; block * round_robin < file_entries; block += ranks) {
          for (size_t i = block * round_robin;
               i < std::min((block + 1) * round_robin, file_entries); ++i, ++local) {
            const auto expected = entries_bytes(i, 1, entry, 5);
            ASSERT_TRUE(std::equal(expected.begin(), expected.end(), bytes.begin() + local * entry))
                << "file entry " << i << " at local entry " << local;
          }
        }
        EXPECT_GT(local, 0u);
        // Blocks of 7 give rank 0 entries 0-6, 28-34: 14 > 12 entries, which does not fit anywhere.
        EXPECT_EQ(WHOLEMEMORY_INVALID_VALUE,
                  wholememory_load_from_file(handle, 0, entry, entry, files, 2, 7));
        WM_ASSERT_OK(wholememory_free(handle));
      });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(WholeMemoryFiles, NarrowFileEntriesFillTheirColumnsAcrossSeveralFiles) {
  TempDir dir;
  const size_t file_entry = 8, memory_entry = 24, column = 8;
  const std::vector<size_t> counts = {7, 0, 30};  // an empty file in the middle
  size_t first = 0;
  for (size_t f = 0; f < counts.size(); ++f) {
    write_file(dir.file("f" + std::to_string(f)), entries_bytes(first, counts[f], file_entry, 9));
    first += counts[f];
  }
  auto results = run_with_comm(ranks_on_nodes(4, 1), [&](const testing::RankContext&,
                                                         wholememory_comm_t comm) {
    const size_t memory_entries = 41;  // 37 from the files, 4 left alone
    wholememory_handle_t handle = nullptr;
    WM_ASSERT_OK(wholememory_malloc(&handle, memory_entries * memory_entry, comm,
                                    WHOLEMEMORY_MT_CONTINUOUS, WHOLEMEMORY_ML_DEVICE,
                                    memory_entry));
    fill_local_partition(handle, 1);  // the columns outside the file's must keep these bytes
    std::vector<std::string> names = {dir.file("f0"), dir.file("f1"), dir.file("f2")};
    const char* files[] = {names[0].c_str(), names[1].c_str(), names[2].c_str()};
    WM_ASSERT_OK(wholememory_load_from_file(handle, column, memory_entry, file_entry, files, 3, 0));

    size_t local_size = 0, local_offset = 0;
    WM_ASSERT_OK(wholememory_get_local_memory(nullptr, &local_size, &local_offset, handle));
    const auto bytes = local_bytes(handle);
    const auto before = pattern(local_offset, local_size, 1);
    for (size_t i = 0; i < local_size; ++i) {
      const size_t global = local_offset + i, entry_index = global / memory_entry;
      const size_t in_entry = global % memory_entry;
      const bool loaded = entry_index < 37 && in_entry >= column && in_entry < column + file_entry;
      const uint8_t expected =
          loaded ? pattern_byte(entry_index * file_entry + in_entry - column, 9) : before[i];
      ASSERT_EQ(expected, bytes[i]) << "byte " << global << (loaded ? " (loaded)" : " (kept)");
    }
    WM_ASSERT_OK(wholememory_free(handle));
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(WholeMemoryFiles, BadFilesFailOnEveryRank) {
  TempDir dir;
  write_file(dir.file("ok"), std::vector<uint8_t>(64 * 16, 1));
  write_file(dir.file("ragged"), std::vector<uint8_t>(64 * 16 + 5, 1));
  write_file(dir.file("big"), std::vector<uint8_t>(1000 * 16, 1));
  write_file(dir.file("other"), std::vector<uint8_t>(32 * 16, 1));
  auto results = run_with_comm(ranks_on_nodes(2, 1), [&](const testing::RankContext& me,
                                                         wholememory_comm_t comm) {
    wholememory_handle_t handle = nullptr;
    WM_ASSERT_OK(wholememory_malloc(&handle, 128 * 16, comm, WHOLEMEMORY_MT_CHUNKED,
                                    WHOLEMEMORY_ML_HOST, 16));
    const std::string ok = dir.file("ok"), ragged = dir.file("ragged"), big = dir.file("big");
    const std::string other = dir.file("other"), missing = dir.file("missing");
    auto load = [&](const std::string& name, size_t offset, size_t memory_entry, size_t file_entry,
                    int round_robin) {
      const char* files[] = {name.c_str()};
      return wholememory_load_from_file(handle, offset, memory_entry, file_entry, files, 1,
                                        round_robin);
    };
    EXPECT_EQ(WHOLEMEMORY_INVALID_VALUE, load(ragged, 0, 16, 16, 0));  // size not a multiple
    EXPECT_EQ(WHOLEMEMORY_INVALID_VALUE, load(big, 0, 16, 16, 0));     // does not fit
    EXPECT_EQ(WHOLEMEMORY_INVALID_VALUE, load(ok, 8, 16, 16, 0));      // columns past the entry
    EXPECT_EQ(WHOLEMEMORY_INVALID_VALUE, load(ok, 0, 16, 16, -1));
    EXPECT_EQ(WHOLEMEMORY_INVALID_VALUE, load(ok, 0, 0, 16, 0));
    EXPECT_EQ(WHOLEMEMORY_INVALID_VALUE, load(ok, 0, 48, 16, 0));  // entries straddle ranks
    // Only rank 1 misses its file; rank 0 fails too.
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, load(me.rank == 1 ? missing : ok, 0, 16, 16, 0));
    // The ranks see files of different sizes.
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, load(me.rank == 1 ? other : ok, 0, 16, 16, 0));
    // Ranks disagree on the layout.
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, load(ok, 0, 16, me.rank == 0 ? 16 : 8, 0));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_load_from_file(handle, 0, 16, 16, nullptr, 1, 0));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_store_to_file(handle, 0, 16, 16, me.rank == 0 ? nullptr : ok.c_str()));
    // Rank 0 cannot create its file: both ranks fail.
    const std::string unwritable = dir.file("no-such-dir/part");
    EXPECT_EQ(WHOLEMEMORY_SYSTEM_ERROR,
              wholememory_store_to_file(
                  handle, 0, 16, 16, me.rank == 0 ? unwritable.c_str() : dir.file("p1").c_str()));
    WM_EXPECT_OK(load(ok, 0, 16, 16, 0));  // and it still works
    WM_ASSERT_OK(wholememory_free(handle));
  });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::wmtest
