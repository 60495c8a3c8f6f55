// TRANS as programs written for MemFabric Hybrid use it (issue 18, items 9, 14 and 15): the
// default dataOpType, registrations a peer can write to the moment the owner's call returned, and
// allocations reserved lazily.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "smem/host/smem_trans.h"
#include "tests/support/multi_process.h"
#include "tests/trans/trans_test_support.h"

namespace memloom::trans_test {
namespace {

// dataOpType 0 (what a zeroed config, or MemFabric's config_init, leaves) is the default.
TEST(TransUpstreamCompat, DataOpTypeZeroIsTheDefault) {
  TransEnvironment env;
  smem_trans_config_t config;
  ASSERT_EQ(smem_trans_config_init(&config), SMEM_SUCCESS);
  config.role = SMEM_TRANS_BOTH;
  config.initTimeout = 10;
  config.dataOpType = static_cast<smem_bm_data_op_type>(0);
  ASSERT_EQ(smem_trans_init(&config), SMEM_SUCCESS) << smem_get_last_err_msg();
  const std::string a = free_unique_id();
  smem_trans_t first = smem_trans_create(env.store_url().c_str(), a.c_str(), &config);
  ASSERT_NE(first, nullptr) << smem_get_last_err_msg();
  const std::string b = free_unique_id();
  smem_trans_t second = smem_trans_create(env.store_url().c_str(), b.c_str(), &config);
  ASSERT_NE(second, nullptr) << smem_get_last_err_msg();
  std::vector<uint8_t> target(4096, 0), data = random_bytes(4096, fresh_seed());
  ASSERT_EQ(smem_trans_register_mem(second, target.data(), target.size(), 0), SMEM_SUCCESS);
  ASSERT_EQ(smem_trans_write(first, data.data(), b.c_str(), target.data(), data.size(), 0),
            SMEM_SUCCESS)
      << smem_get_last_err_msg();
  EXPECT_EQ(target, data);
  smem_trans_destroy(second, 0);
  smem_trans_destroy(first, 0);
}

// 64 GiB on a host with less: the reservation succeeds, touched pages are real memory.
TEST(TransUpstreamCompat, LargeAllocationsAreReservedLazily) {
  const uint64_t physical = static_cast<uint64_t>(::sysconf(_SC_PHYS_PAGES)) *
                            static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const size_t bytes = 64ull << 30;
  TransEnvironment env;
  smem_trans_config_t config = make_config(SMEM_TRANS_BOTH);
  ASSERT_EQ(smem_trans_init(&config), SMEM_SUCCESS);
  const std::string id = free_unique_id();
  smem_trans_t handle = smem_trans_create(env.store_url().c_str(), id.c_str(), &config);
  ASSERT_NE(handle, nullptr) << smem_get_last_err_msg();
  std::printf("host memory %llu bytes, allocating %zu\n", static_cast<unsigned long long>(physical),
              bytes);
  auto* memory = static_cast<uint8_t*>(smem_trans_malloc(handle, bytes));
  ASSERT_NE(memory, nullptr) << smem_get_last_err_msg();
  // The first and the last page, written by a peer instance through the engine.
  const std::string peer_id = free_unique_id();
  smem_trans_t peer = smem_trans_create(env.store_url().c_str(), peer_id.c_str(), &config);
  ASSERT_NE(peer, nullptr) << smem_get_last_err_msg();
  std::vector<uint8_t> data = random_bytes(4096, fresh_seed());
  for (size_t offset : {size_t{0}, bytes - data.size()}) {
    ASSERT_EQ(smem_trans_write(peer, data.data(), id.c_str(), memory + offset, data.size(), 0),
              SMEM_SUCCESS)
        << smem_get_last_err_msg();
    EXPECT_EQ(std::memcmp(memory + offset, data.data(), data.size()), 0);
  }
  EXPECT_EQ(smem_trans_free(handle, memory), SMEM_SUCCESS);
  // Beyond what an address space can hold is still refused, with a code.
  EXPECT_EQ(smem_trans_malloc(handle, SIZE_MAX / 2), nullptr);
  smem_trans_destroy(peer, 0);
  smem_trans_destroy(handle, 0);
}

// The owner registers fresh memory and at once tells the writer through the store; the writer
// writes the moment it hears, with no retry. Many rounds, each with a new registration.
void register_then_signal(const testing::RankContext& context, int rounds) {
  auto client = store::Client::connect(context.store_url);
  std::string id;
  smem_trans_t handle = init_and_create(context.store_url, make_config(SMEM_TRANS_BOTH), &id);
  ASSERT_NE(handle, nullptr) << smem_get_last_err_msg();
  publish(*client, "id/" + std::to_string(context.rank), id);
  const std::string peer_id = await(*client, "id/" + std::to_string(1 - context.rank));
  constexpr size_t kBytes = 8192;
  for (int round = 0; round < rounds; ++round) {
    const std::string key = "registered/" + std::to_string(round);
    if (context.rank == 0) {
      // A new buffer (new address) every round, half user memory, half malloc'd.
      std::vector<uint8_t> owned;
      uint8_t* memory = nullptr;
      if (round % 2 == 0) {
        owned.assign(kBytes, 0);
        memory = owned.data();
        ASSERT_EQ(smem_trans_register_mem(handle, memory, kBytes, 0), SMEM_SUCCESS)
            << smem_get_last_err_msg();
      } else {
        memory = static_cast<uint8_t*>(smem_trans_malloc(handle, kBytes));
        ASSERT_NE(memory, nullptr) << smem_get_last_err_msg();
      }
      publish(*client, key, std::to_string(reinterpret_cast<uintptr_t>(memory)));
      await(*client, "written/" + std::to_string(round));
      EXPECT_EQ(std::memcmp(memory, random_bytes(kBytes, round + 1).data(), kBytes), 0)
          << "round " << round;
      if (round % 2 == 0) {
        ASSERT_EQ(smem_trans_deregister_mem(handle, memory), SMEM_SUCCESS);
      } else {
        ASSERT_EQ(smem_trans_free(handle, memory), SMEM_SUCCESS);
      }
    } else {
      auto* remote = reinterpret_cast<uint8_t*>(std::stoull(await(*client, key)));
      std::vector<uint8_t> data = random_bytes(kBytes, round + 1);
      ASSERT_EQ(smem_trans_write(handle, data.data(), peer_id.c_str(), remote, kBytes, 0),
                SMEM_SUCCESS)
          << "round " << round << ": " << smem_get_last_err_msg();
      publish(*client, "written/" + std::to_string(round), "1");
    }
  }
  store_barrier(*client, "done", 2);
  smem_trans_uninit(0);
}

// Same node (direct copies), two nodes (TCP), and same node through host buffers and stream copies
// (the CUDA backend's path, forced by MEMLOOM_TRANS_STAGING).
struct VisibilityLayout {
  int nodes;
  bool staged;
};

class TransRegistrationVisibility : public ::testing::TestWithParam<VisibilityLayout> {};

TEST_P(TransRegistrationVisibility, APeerWritesTheMomentRegisterReturns) {
  testing::MultiProcessOptions options;
  options.ranks = 2;
  options.nodes = GetParam().nodes;
  options.timeout = std::chrono::seconds(90);
  if (GetParam().staged) options.env["MEMLOOM_TRANS_STAGING"] = "1";
  EXPECT_ALL_RANKS_PASS(testing::run_ranks(
      options, [](const testing::RankContext& context) { register_then_signal(context, 60); }));
}

INSTANTIATE_TEST_SUITE_P(Paths, TransRegistrationVisibility,
                         ::testing::Values(VisibilityLayout{1, false}, VisibilityLayout{2, false},
                                           VisibilityLayout{1, true}),
                         [](const ::testing::TestParamInfo<VisibilityLayout>& info) {
                           return std::string(info.param.nodes == 1 ? "OneNode" : "TwoNodes") +
                                  (info.param.staged ? "Staged" : "");
                         });

}  // namespace
}  // namespace memloom::trans_test
