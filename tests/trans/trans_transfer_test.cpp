// Reads and writes between two instances of one process, over each data path: direct copies
// (cross-memory attach for user memory, mapping for smem_trans_malloc memory) and TCP.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <atomic>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "smem/host/smem_trans.h"
#include "tests/trans/trans_test_support.h"

namespace memloom::trans_test {
namespace {

struct PathCase {
  const char* name;
  uint32_t data_ops;
  bool malloc_target;   // the receiver's memory comes from smem_trans_malloc
  bool staged = false;  // bytes through host buffers and stream copies (the CUDA backend's way)
};

class TransTransfer : public ::testing::TestWithParam<PathCase> {
 protected:
  static constexpr size_t kTargetBytes = 96u << 20;

  // Instances go before the memory they serve (members are destroyed after TearDown).
  void TearDown() override {
    smem_trans_uninit(0);
    ::unsetenv("MEMLOOM_TRANS_STAGING");
  }

  void SetUp() override {
    if (GetParam().staged) ::setenv("MEMLOOM_TRANS_STAGING", "1", 1);
    smem_trans_config_t config = make_config(SMEM_TRANS_BOTH, GetParam().data_ops);
    receiver_id_ = free_unique_id();
    receiver_ = smem_trans_create(env_.store_url().c_str(), receiver_id_.c_str(), &config);
    sender_ = smem_trans_create(env_.store_url().c_str(), free_unique_id().c_str(), &config);
    ASSERT_TRUE(receiver_ && sender_) << smem_get_last_err_msg();
    if (GetParam().malloc_target) {
      target_ = static_cast<uint8_t*>(smem_trans_malloc(receiver_, kTargetBytes));
      ASSERT_NE(target_, nullptr) << smem_get_last_err_msg();
    } else {
      owned_.resize(kTargetBytes);
      target_ = owned_.data();
      ASSERT_EQ(smem_trans_register_mem(receiver_, target_, kTargetBytes, 0), SMEM_SUCCESS);
    }
  }

  // Writes `sizes` at consecutive offsets (with gaps), reads them back into fresh buffers, and
  // checks both directions byte for byte.
  void round_trip(const std::vector<size_t>& sizes) {
    std::vector<std::vector<uint8_t>> sources, results;
    std::vector<const void*> locals;
    std::vector<void*> remotes, read_locals;
    std::vector<const void*> read_remotes;
    std::vector<size_t> lengths(sizes);
    size_t offset = 0;
    uint64_t seed = fresh_seed();
    for (size_t i = 0; i < sizes.size(); ++i) {
      sources.push_back(random_bytes(sizes[i], seed + i));
      results.emplace_back(sizes[i], 0);
      ASSERT_LE(offset + sizes[i], kTargetBytes);
      locals.push_back(sources.back().data());
      remotes.push_back(target_ + offset);
      read_locals.push_back(results.back().data());
      read_remotes.push_back(target_ + offset);
      offset += sizes[i] + (i % 3);  // some entries adjacent, some not
    }
    const char* peer = receiver_id_.c_str();
    const auto count = static_cast<uint32_t>(sizes.size());
    if (count == 1) {
      ASSERT_EQ(smem_trans_write(sender_, locals[0], peer, remotes[0], lengths[0], 0), SMEM_SUCCESS)
          << smem_get_last_err_msg();
    } else {
      ASSERT_EQ(smem_trans_batch_write(sender_, locals.data(), peer, remotes.data(), lengths.data(),
                                       count, 0),
                SMEM_SUCCESS)
          << smem_get_last_err_msg();
    }
    for (size_t i = 0; i < sizes.size(); ++i) {
      ASSERT_EQ(std::memcmp(remotes[i], sources[i].data(), sizes[i]), 0) << "written entry " << i;
    }
    // Change the target so the read cannot see stale local copies, then read it back.
    for (size_t i = 0; i < sizes.size(); ++i)
      fill_random(remotes[i], sizes[i], seed ^ (0x9e37 + i));
    if (count == 1) {
      ASSERT_EQ(smem_trans_read(sender_, read_locals[0], peer, read_remotes[0], lengths[0], 0),
                SMEM_SUCCESS)
          << smem_get_last_err_msg();
    } else {
      ASSERT_EQ(smem_trans_batch_read(sender_, read_locals.data(), peer, read_remotes.data(),
                                      lengths.data(), count, 0),
                SMEM_SUCCESS)
          << smem_get_last_err_msg();
    }
    for (size_t i = 0; i < sizes.size(); ++i) {
      ASSERT_EQ(std::memcmp(results[i].data(), remotes[i], sizes[i]), 0) << "read entry " << i;
    }
  }

  TransEnvironment env_;
  std::string receiver_id_;
  smem_trans_t receiver_ = nullptr;
  smem_trans_t sender_ = nullptr;
  std::vector<uint8_t> owned_;
  uint8_t* target_ = nullptr;
};

TEST_P(TransTransfer, SingleEntriesOfManySizes) {
  for (size_t size : {size_t{1}, size_t{7}, size_t{4096}, size_t{65537}, size_t{(1u << 20) + 3}}) {
    SCOPED_TRACE(size);
    round_trip({size});
  }
}

TEST_P(TransTransfer, BatchOfMixedSizesFromOneByteTo64MiB) {
  round_trip({1, 2, 3, 4095, 4096, 4097, 1u << 16, (1u << 20) - 1, (16u << 20) + 1, 64u << 20});
}

TEST_P(TransTransfer, BatchOf10000SmallEntries) {
  std::mt19937 random(static_cast<uint32_t>(fresh_seed()));
  std::vector<size_t> sizes(10000);
  for (auto& size : sizes) size = 1 + random() % 2048;
  round_trip(sizes);
}

TEST_P(TransTransfer, BatchesOfOneToManyEntries) {
  for (size_t count : {1, 2, 17, 1023, 1024, 1025, 3000}) {
    SCOPED_TRACE(count);
    round_trip(std::vector<size_t>(count, 300));
  }
}

TEST_P(TransTransfer, ConcurrentTransfersFromSeveralThreads) {
  constexpr int kThreads = 4;
  constexpr size_t kSlice = 2u << 20;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      uint8_t* slice = target_ + t * kSlice;
      std::vector<uint8_t> back(kSlice);
      for (int round = 0; round < 10; ++round) {
        auto data = random_bytes(kSlice, fresh_seed());
        // Half of the slice as one entry, half as 64 entries.
        std::vector<const void*> locals;
        std::vector<void*> remotes;
        std::vector<size_t> sizes;
        for (size_t piece = 0; piece < 64; ++piece) {
          size_t step = kSlice / 2 / 64;
          locals.push_back(data.data() + kSlice / 2 + piece * step);
          remotes.push_back(slice + kSlice / 2 + piece * step);
          sizes.push_back(step);
        }
        const char* peer = receiver_id_.c_str();
        bool ok =
            smem_trans_write(sender_, data.data(), peer, slice, kSlice / 2, 0) == SMEM_SUCCESS &&
            smem_trans_batch_write(sender_, locals.data(), peer, remotes.data(), sizes.data(), 64,
                                   0) == SMEM_SUCCESS &&
            smem_trans_read(sender_, back.data(), peer, slice, kSlice, 0) == SMEM_SUCCESS;
        if (!ok || back != data) failures++;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0) << smem_get_last_err_msg();
}

TEST_P(TransTransfer, MemoryRegisteredJustBeforeTheCallIsVisible) {
  smem_trans_config_t config = make_config(SMEM_TRANS_RECEIVER, GetParam().data_ops);
  const std::string id = free_unique_id();
  smem_trans_t fresh = smem_trans_create(env_.store_url().c_str(), id.c_str(), &config);
  ASSERT_NE(fresh, nullptr) << smem_get_last_err_msg();
  std::vector<std::vector<uint8_t>> regions;
  for (int i = 0; i < 50; ++i) {
    regions.emplace_back(1000 + i);
    auto& region = regions.back();
    ASSERT_EQ(smem_trans_register_mem(fresh, region.data(), region.size(), 0), SMEM_SUCCESS);
    auto data = random_bytes(region.size(), fresh_seed());
    ASSERT_EQ(smem_trans_write(sender_, data.data(), id.c_str(), region.data(), region.size(), 0),
              SMEM_SUCCESS)
        << "region " << i << ": " << smem_get_last_err_msg();
    ASSERT_EQ(region, data);
  }
  // And a deregistered one is refused at once.
  ASSERT_EQ(smem_trans_deregister_mem(fresh, regions[10].data()), SMEM_SUCCESS);
  std::vector<uint8_t> data(regions[10].size(), 0xee);
  auto before = regions[10];
  EXPECT_EQ(smem_trans_write(sender_, data.data(), id.c_str(), regions[10].data(), data.size(), 0),
            SMEM_INVALID_PARAM);
  EXPECT_EQ(regions[10], before);
  EXPECT_EQ(smem_trans_read(sender_, data.data(), id.c_str(), regions[10].data(), data.size(), 0),
            SMEM_INVALID_PARAM);
  smem_trans_destroy(fresh, 0);
  // A destroyed instance is unknown (or gone) at once.
  int code = smem_trans_write(sender_, data.data(), id.c_str(), regions[0].data(), 8, 0);
  EXPECT_TRUE(code == SMEM_NOT_FOUND || code == SMEM_COMM_ERROR) << code;
}

INSTANTIATE_TEST_SUITE_P(Paths, TransTransfer,
                         ::testing::Values(PathCase{"CrossMemoryAttach", SMEMB_DATA_OP_SDMA, false},
                                           PathCase{"MappedMalloc", SMEMB_DATA_OP_SDMA, true},
                                           PathCase{"Tcp", SMEMB_DATA_OP_HOST_TCP, false},
                                           PathCase{"TcpIntoMalloc", SMEMB_DATA_OP_HOST_TCP, true},
                                           PathCase{"Staged", SMEMB_DATA_OP_SDMA, false, true},
                                           PathCase{"StagedIntoMalloc", SMEMB_DATA_OP_HOST_TCP,
                                                    true, true}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace memloom::trans_test
