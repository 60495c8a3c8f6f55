// Many emulated ranks on one small machine: 256 processes on one emulated node join an SHM world,
// create an object, run a barrier and an allgather, and tear everything down. Rank 0 prints how
// long each phase took; every rank checks what it gathered.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "smem/host/smem_shm.h"
#include "src/core/platform_loader.h"
#include "tests/faults/process_audit.h"
#include "tests/support/multi_process.h"

namespace memloom::load {
namespace {

using Clock = std::chrono::steady_clock;

// MEMLOOM_LOAD_RANKS overrides the count, to find the limit of a machine.
const int kRanks = [] {
  const char* value = std::getenv("MEMLOOM_LOAD_RANKS");
  return value != nullptr ? std::atoi(value) : 256;
}();
constexpr uint64_t kSymmetric = 2ull << 20;  // 512 MiB of slots in all

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

TEST(ManyRanks, TwoHundredFiftySixRanksInitBarrierAllgatherDestroy) {
  const char* backend = std::getenv("MEMLOOM_BACKEND");
  if (backend != nullptr && std::string(backend) == "cuda" &&
      std::getenv("MEMLOOM_LOAD_RANKS") == nullptr) {
    // Seen on one H200: cudaSetDevice failed with "out of memory" in many of the 256 ranks.
    GTEST_SKIP() << "every rank of the CUDA backend holds a CUDA context (hundreds of MiB of GPU "
                    "memory), so 256 of them do not fit on a machine's GPUs; this control-plane "
                    "load test runs on the emulated backend (MEMLOOM_LOAD_RANKS sets a count "
                    "the GPUs hold)";
  }
  std::vector<std::string> shm_before = testing::leftover_shm_entries();
  testing::MultiProcessOptions options;
  options.ranks = kRanks;
  options.nodes = 1;
  options.timeout = std::chrono::seconds(400);
  options.env["MEMLOOM_LOG_LEVEL"] = "error";
  const auto job_start = Clock::now();
  auto results = testing::run_ranks(options, [](const testing::RankContext& ctx) {
    smem_shm_config_t config;
    smem_shm_config_init(&config);
    config.startConfigStoreServer = false;
    config.shmInitTimeout = 300;
    config.shmCreateTimeout = 300;
    config.controlOperationTimeout = 300;
    const auto start = Clock::now();
    // Ranks share the node's devices (8 on an emulated node).
    const int devices = core::platform().device_count();
    ASSERT_EQ(smem_shm_init(ctx.store_url.c_str(), kRanks, ctx.rank,
                            static_cast<uint16_t>(ctx.local_rank % devices), &config),
              SMEM_SUCCESS)
        << smem_get_last_err_msg();
    const double init_s = seconds_since(start);
    void* gva = nullptr;
    smem_shm_t shm = smem_shm_create(0, kRanks, ctx.rank, kSymmetric, SMEMS_DATA_OP_MTE, 0, &gva);
    ASSERT_NE(shm, nullptr) << smem_get_last_err_msg();
    const double create_s = seconds_since(start) - init_s;
    auto phase = Clock::now();
    ASSERT_EQ(smem_shm_control_barrier(shm), SMEM_SUCCESS) << smem_get_last_err_msg();
    const double barrier_s = seconds_since(phase);
    phase = Clock::now();
    const uint64_t mine = 0x1000000ull * static_cast<uint64_t>(ctx.rank) + 7;
    std::vector<uint64_t> all(kRanks);
    ASSERT_EQ(
        smem_shm_control_allgather(shm, reinterpret_cast<const char*>(&mine), sizeof(mine),
                                   reinterpret_cast<char*>(all.data()), kRanks * sizeof(uint64_t)),
        SMEM_SUCCESS)
        << smem_get_last_err_msg();
    const double allgather_s = seconds_since(phase);
    for (int r = 0; r < kRanks; ++r) {
      ASSERT_EQ(all[r], 0x1000000ull * static_cast<uint64_t>(r) + 7) << "rank " << r;
    }
    phase = Clock::now();
    ASSERT_EQ(smem_shm_destroy(shm, 0), SMEM_SUCCESS) << smem_get_last_err_msg();
    smem_shm_uninit(0);
    const double destroy_s = seconds_since(phase);
    if (ctx.rank == 0) {
      std::printf(
          "[load] %d ranks on one node, rank 0: init %.2f s, create %.2f s, barrier %.3f s, "
          "allgather %.3f s, destroy+uninit %.2f s; peak RSS now %.1f MiB\n",
          kRanks, init_s, create_s, barrier_s, allgather_s, destroy_s,
          static_cast<double>(faults::resident_bytes()) / (1 << 20));
    }
  });
  EXPECT_ALL_RANKS_PASS(results);
  std::printf("[load] %d ranks: the whole job took %.1f s\n", kRanks, seconds_since(job_start));
  EXPECT_EQ(testing::leftover_shm_entries().size(), shm_before.size());
  EXPECT_TRUE(faults::live_children().empty());
}

}  // namespace
}  // namespace memloom::load
