// Two, four and eight instances in separate processes, on one and on two emulated nodes: every
// rank writes into and reads from its neighbours and every other rank, checked byte for byte.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "smem/host/smem_trans.h"
#include "tests/support/multi_process.h"
#include "tests/trans/trans_test_support.h"

namespace memloom::trans_test {
namespace {

struct Layout {
  int ranks;
  int nodes;
  bool staged = false;  // through host buffers and stream copies, as on the CUDA backend
};

constexpr size_t kBytes = 4u << 20;  // per rank: first half written by the previous rank
constexpr size_t kHalf = kBytes / 2;
constexpr size_t kBlock = 4096;  // read from every rank

// Entry sizes that cover `total` bytes, from 1 byte to 64 KiB, reproducible from the seed.
std::vector<size_t> entry_sizes(size_t total, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::vector<size_t> sizes;
  while (total > 0) {
    size_t size = std::min<size_t>(total, 1 + random() % (random() % 4 == 0 ? 65536 : 512));
    sizes.push_back(size);
    total -= size;
  }
  return sizes;
}

void run_rank(const testing::RankContext& context, uint64_t seed) {
  const int rank = context.rank;
  const int size = context.world_size;
  auto client = store::Client::connect(context.store_url);
  std::string id;
  smem_trans_t handle = init_and_create(context.store_url, make_config(SMEM_TRANS_BOTH), &id);
  ASSERT_NE(handle, nullptr) << smem_get_last_err_msg();
  // Even ranks serve user memory (cross-memory attach inside a node), odd ranks malloc'd memory.
  std::vector<uint8_t> owned;
  uint8_t* memory = nullptr;
  if (rank % 2 == 0) {
    owned.resize(kBytes);
    memory = owned.data();
    ASSERT_EQ(smem_trans_register_mem(handle, memory, kBytes, 0), SMEM_SUCCESS);
  } else {
    memory = static_cast<uint8_t*>(smem_trans_malloc(handle, kBytes));
    ASSERT_NE(memory, nullptr) << smem_get_last_err_msg();
  }
  fill_random(memory + kHalf, kHalf, seed + 1000 + rank);  // what others read
  std::ostringstream mine;
  mine << id << " " << reinterpret_cast<uintptr_t>(memory);
  publish(*client, "rank/" + std::to_string(rank), mine.str());
  store_barrier(*client, "created", size);

  std::vector<std::string> ids(size);
  std::vector<uint8_t*> memories(size);
  for (int r = 0; r < size; ++r) {
    std::istringstream in(await(*client, "rank/" + std::to_string(r)));
    uintptr_t address = 0;
    in >> ids[r] >> address;
    memories[r] = reinterpret_cast<uint8_t*>(address);
  }

  // Write my data into the next rank's first half, as one batch of many entries.
  const int next = (rank + 1) % size;
  auto data = random_bytes(kHalf, seed + rank);
  auto sizes = entry_sizes(kHalf, seed + rank);
  std::vector<const void*> locals;
  std::vector<void*> remotes;
  size_t offset = 0;
  for (size_t s : sizes) {
    locals.push_back(data.data() + offset);
    remotes.push_back(memories[next] + offset);
    offset += s;
  }
  ASSERT_EQ(smem_trans_batch_write(handle, locals.data(), ids[next].c_str(), remotes.data(),
                                   sizes.data(), static_cast<uint32_t>(sizes.size()), 0),
            SMEM_SUCCESS)
      << smem_get_last_err_msg();

  // Read a block of every rank's second half (myself included) in one batch per peer, and the
  // whole second half of the previous rank.
  for (int r = 0; r < size; ++r) {
    std::vector<uint8_t> block(kBlock * 4);
    void* read_locals[4];
    const void* read_remotes[4];
    size_t read_sizes[4] = {kBlock, kBlock, kBlock, kBlock};
    for (int i = 0; i < 4; ++i) {
      read_locals[i] = block.data() + i * kBlock;
      read_remotes[i] = memories[r] + kHalf + (3 - i) * 3 * kBlock;
    }
    ASSERT_EQ(
        smem_trans_batch_read(handle, read_locals, ids[r].c_str(), read_remotes, read_sizes, 4, 0),
        SMEM_SUCCESS)
        << "reading rank " << r << ": " << smem_get_last_err_msg();
    auto expected = random_bytes(kHalf, seed + 1000 + r);
    for (int i = 0; i < 4; ++i) {
      ASSERT_EQ(
          std::memcmp(block.data() + i * kBlock, expected.data() + (3 - i) * 3 * kBlock, kBlock), 0)
          << "block " << i << " of rank " << r;
    }
  }
  const int previous = (rank + size - 1) % size;
  std::vector<uint8_t> whole(kHalf);
  ASSERT_EQ(smem_trans_read(handle, whole.data(), ids[previous].c_str(), memories[previous] + kHalf,
                            kHalf, 0),
            SMEM_SUCCESS)
      << smem_get_last_err_msg();
  EXPECT_EQ(whole, random_bytes(kHalf, seed + 1000 + previous));

  store_barrier(*client, "written", size);
  EXPECT_EQ(std::memcmp(memory, random_bytes(kHalf, seed + previous).data(), kHalf), 0)
      << "rank " << rank << " did not receive rank " << previous << "'s data";
  store_barrier(*client, "checked", size);
  smem_trans_uninit(0);
}

class TransMultiProcess : public ::testing::TestWithParam<Layout> {};

TEST_P(TransMultiProcess, EveryRankWritesAndReadsItsPeersByteExact) {
  testing::MultiProcessOptions options;
  options.ranks = GetParam().ranks;
  options.nodes = GetParam().nodes;
  options.timeout = std::chrono::seconds(90);
  if (GetParam().staged) options.env["MEMLOOM_TRANS_STAGING"] = "1";
  const uint64_t seed = fresh_seed();
  auto results = testing::run_ranks(
      options, [&](const testing::RankContext& context) { run_rank(context, seed); });
  EXPECT_ALL_RANKS_PASS(results);
}

INSTANTIATE_TEST_SUITE_P(Layouts, TransMultiProcess,
                         ::testing::Values(Layout{2, 1}, Layout{2, 2}, Layout{4, 1}, Layout{4, 2},
                                           Layout{8, 1}, Layout{8, 2}, Layout{4, 1, true},
                                           Layout{4, 2, true}),
                         [](const auto& info) {
                           return std::to_string(info.param.ranks) + "Ranks" +
                                  std::to_string(info.param.nodes) + "Nodes" +
                                  (info.param.staged ? "Staged" : "");
                         });

}  // namespace
}  // namespace memloom::trans_test
