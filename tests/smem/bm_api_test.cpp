// BM API: defaults, argument checks, address queries, joining and leaving (also while peers copy),
// user memory registration, auto ranking and dead peers.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "tests/smem/bm_test_util.h"

namespace memloom::testing {
namespace {

TEST(BmApi, ConfigInitSetsPublishedDefaults) {
  smem_bm_config_t config;
  std::memset(&config, 0xab, sizeof(config));
  ASSERT_SMEM_OK(smem_bm_config_init(&config));
  EXPECT_EQ(config.initTimeout, 120u);
  EXPECT_EQ(config.createTimeout, 120u);
  EXPECT_EQ(config.controlOperationTimeout, 120u);
  EXPECT_TRUE(config.startConfigStoreServer);
  EXPECT_FALSE(config.startConfigStoreOnly);
  EXPECT_FALSE(config.dynamicWorldSize);
  EXPECT_TRUE(config.unifiedAddressSpace);
  EXPECT_TRUE(config.autoRanking);
  EXPECT_EQ(config.rankId, UINT16_MAX);
  EXPECT_EQ(config.flags, 0u);
  // MemFabric zeroes the rest.
  const smem_bm_config_t zero{};
  EXPECT_EQ(std::memcmp(config.hcomUrl, zero.hcomUrl, sizeof(zero.hcomUrl)), 0);
  EXPECT_EQ(std::memcmp(&config.hcomTlsConfig, &zero.hcomTlsConfig, sizeof(zero.hcomTlsConfig)), 0);
  EXPECT_EQ(std::memcmp(&config.storeTlsConfig, &zero.storeTlsConfig, sizeof(zero.storeTlsConfig)),
            0);
  EXPECT_SMEM_FAILS(smem_bm_config_init(nullptr), SMEM_INVALID_PARAM, "config is null");
}

TEST(BmApi, CallsBeforeInitFailWithClearCodes) {
  EXPECT_EQ(smem_bm_create(0, 1, SMEMB_DATA_OP_SDMA, 0, kSlot, 0), nullptr);
  EXPECT_TRUE(last_error_contains("smem_bm_init has not been called")) << smem_get_last_err_msg();
  EXPECT_EQ(smem_bm_create2(0, nullptr), nullptr);
  EXPECT_EQ(smem_bm_get_rank_id(), UINT32_MAX);
  EXPECT_SMEM_FAILS(smem_bm_join(nullptr, 0, nullptr), SMEM_INVALID_PARAM, "handle is null");
  int fake = 0;
  EXPECT_SMEM_FAILS(smem_bm_wait(&fake), SMEM_NOT_INITIALIZED, "not been called");
  EXPECT_EQ(smem_bm_ptr_by_mem_type(nullptr, SMEM_MEM_TYPE_HOST, 0), nullptr);
  EXPECT_EQ(smem_bm_get_local_mem_size_by_mem_type(nullptr, SMEM_MEM_TYPE_HOST), 0u);
  smem_bm_config_t config = bm_test_config();
  EXPECT_SMEM_FAILS(smem_bm_init(nullptr, 1, 0, &config), SMEM_INVALID_PARAM, "storeURL is null");
  EXPECT_SMEM_FAILS(smem_bm_init("tcp://127.0.0.1:1", 0, 0, &config), SMEM_INVALID_PARAM,
                    "worldSize 0");
  EXPECT_SMEM_FAILS(smem_bm_init("tcp://127.0.0.1:1", 1025, 0, &config), SMEM_INVALID_PARAM,
                    "worldSize 1025");
  config.rankId = 2;
  EXPECT_SMEM_FAILS(smem_bm_init("tcp://127.0.0.1:1", 2, 0, &config), SMEM_INVALID_PARAM,
                    "rankId 2");
  config.rankId = 0;
  config.storeTlsConfig.tlsEnable = true;  // without its files (tests/tls covers store TLS)
  EXPECT_SMEM_FAILS(smem_bm_init("tcp://127.0.0.1:1", 2, 0, &config), SMEM_INVALID_PARAM,
                    "storeTlsConfig.caPath");
  config.storeTlsConfig.tlsEnable = false;
  config.hcomTlsConfig.tlsEnable = true;
  EXPECT_SMEM_FAILS(smem_bm_init("tcp://127.0.0.1:1", 2, 0, &config), SMEM_NOT_IMPLEMENTED, "TLS");
}

TEST(BmObjects, BadArgumentsAreRefusedWithoutAllocating) {
  auto results = run_ranks(ranks_on_nodes(1), [](const RankContext& ctx) {
    ASSERT_SMEM_OK(bm_init_rank(ctx));
    EXPECT_EQ(smem_bm_get_rank_id(), 0u);
    smem_bm_config_t config = bm_test_config();
    // As in MemFabric, a second init succeeds and changes nothing.
    EXPECT_SMEM_OK(smem_bm_init(ctx.store_url.c_str(), 1, 0, &config));
    EXPECT_EQ(smem_bm_get_rank_id(), 0u);
    auto data_op = static_cast<smem_bm_data_op_type>(SMEMB_DATA_OP_SDMA);
    EXPECT_EQ(smem_bm_create(0, 1, static_cast<smem_bm_data_op_type>(0), 0, kSlot, 0), nullptr);
    EXPECT_TRUE(last_error_contains("dataOpType 0")) << smem_get_last_err_msg();
    // ROCE is a known bit; with an unknown one beside it the set is still refused.
    EXPECT_EQ(smem_bm_create(0, 1, static_cast<smem_bm_data_op_type>(SMEMB_DATA_OP_ROCE | 1u << 5),
                             0, kSlot, 0),
              nullptr);
    EXPECT_TRUE(last_error_contains("dataOpType 34")) << smem_get_last_err_msg();
    EXPECT_EQ(smem_bm_create(0, 1, data_op, 0, 0, 0), nullptr);
    EXPECT_TRUE(last_error_contains("contributes no memory")) << smem_get_last_err_msg();
    EXPECT_EQ(smem_bm_create(0, 1, data_op, 0, kSlot + 1, 0), nullptr);
    EXPECT_TRUE(last_error_contains("granularity")) << smem_get_last_err_msg();
    EXPECT_EQ(smem_bm_create(0, 1, data_op, 0, (64ull << 30) + kSlot, 0), nullptr);
    EXPECT_TRUE(last_error_contains("exceeds the maximum")) << smem_get_last_err_msg();
    smem_bm_create_option_t option{};
    option.localHBMSize = 2 * kSlot;
    option.maxHbmSize = kSlot;
    option.dataOpType = SMEMB_DATA_OP_SDMA;
    option.dramShmFd = -1;
    EXPECT_EQ(smem_bm_create2(0, &option), nullptr);
    EXPECT_TRUE(last_error_contains("exceeds its slot size")) << smem_get_last_err_msg();
    option.maxHbmSize = 0;
    std::memset(option.tag, 'x', sizeof(option.tag));
    EXPECT_EQ(smem_bm_create2(0, &option), nullptr);
    EXPECT_TRUE(last_error_contains("tag is not NUL-terminated")) << smem_get_last_err_msg();

    smem_bm_t bm = smem_bm_create(0, 1, data_op, 0, kSlot, 0);
    ASSERT_NE(bm, nullptr) << smem_get_last_err_msg();
    EXPECT_EQ(smem_bm_create(0, 1, data_op, 0, kSlot, 0), nullptr);
    EXPECT_TRUE(last_error_contains("id 0 is in use")) << smem_get_last_err_msg();

    std::vector<uint8_t> buffer(4096);
    EXPECT_SMEM_FAILS(bm_copy(bm, buffer.data(), device_slot(bm, 0), 16, SMEMB_COPY_H2G),
                      SMEM_INVALID_PARAM, "call smem_bm_join");
    void* local = nullptr;
    ASSERT_SMEM_OK(smem_bm_join(bm, 0, &local));
    EXPECT_SMEM_FAILS(smem_bm_join(bm, 0, &local), SMEM_REPEAT_CALL, "already joined");
    char* slot = device_slot(bm, 0);
    // Bounds: crossing the slot's end, outside the GVA, local memory inside the GVA, no host range.
    EXPECT_SMEM_FAILS(bm_copy(bm, buffer.data(), slot + kSlot - 8, 16, SMEMB_COPY_H2G),
                      SMEM_INVALID_PARAM, "crosses the end of rank 0's slot");
    EXPECT_SMEM_FAILS(bm_copy(bm, buffer.data(), slot + kSlot, 16, SMEMB_COPY_H2G),
                      SMEM_INVALID_PARAM, "outside the device range");
    EXPECT_SMEM_FAILS(bm_copy(bm, buffer.data(), buffer.data() + 64, 16, SMEMB_COPY_L2G),
                      SMEM_INVALID_PARAM, "outside the device range");
    EXPECT_SMEM_FAILS(bm_copy(bm, slot, slot + 64, 16, SMEMB_COPY_L2G), SMEM_INVALID_PARAM,
                      "overlaps the device range");
    EXPECT_SMEM_FAILS(bm_copy(bm, buffer.data(), slot, 16, SMEMB_COPY_H2GH), SMEM_INVALID_PARAM,
                      "no host range");
    EXPECT_SMEM_FAILS(bm_copy(bm, buffer.data(), slot, 16, SMEMB_COPY_G2G), SMEM_INVALID_PARAM,
                      "outside the GVA");
    EXPECT_SMEM_FAILS(bm_copy(bm, buffer.data(), slot, 0, SMEMB_COPY_H2G), SMEM_INVALID_PARAM,
                      "dataSize is 0");
    EXPECT_SMEM_FAILS(bm_copy(bm, nullptr, slot, 16, SMEMB_COPY_H2G), SMEM_INVALID_PARAM, "null");
    EXPECT_SMEM_FAILS(bm_copy(bm, buffer.data(), slot, 16, static_cast<smem_bm_copy_type>(10)),
                      SMEM_INVALID_PARAM, "copy type 10");
    EXPECT_SMEM_FAILS(smem_bm_copy(bm, nullptr, SMEMB_COPY_H2G, 0), SMEM_INVALID_PARAM,
                      "params is null");
    ASSERT_SMEM_OK(
        bm_copy(bm, buffer.data(), slot + kSlot - 16, 16, SMEMB_COPY_H2G));  // the last bytes

    ASSERT_SMEM_OK(smem_bm_leave(bm, 0));
    EXPECT_SMEM_FAILS(smem_bm_leave(bm, 0), SMEM_INVALID_PARAM, "has not joined");
    smem_bm_destroy(bm);
    EXPECT_SMEM_FAILS(smem_bm_wait(bm), SMEM_INVALID_PARAM, "not a live BM object");
    smem_bm_uninit(0);
    EXPECT_EQ(smem_bm_get_rank_id(), UINT32_MAX);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(BmObjects, MismatchedSlotSizesFailOnEveryRank) {
  auto results = run_ranks(ranks_on_nodes(2), [](const RankContext& ctx) {
    ASSERT_SMEM_OK(bm_init_rank(ctx));
    const uint64_t hbm = ctx.rank == 0 ? kSlot : 2 * kSlot;
    EXPECT_EQ(smem_bm_create(0, 2, SMEMB_DATA_OP_SDMA, 0, hbm, 0), nullptr);
    EXPECT_TRUE(last_error_contains("disagree on the HBM slot size")) << smem_get_last_err_msg();
    // Equal slots, different contributions: fine; copies stop at each rank's contribution.
    smem_bm_create_option_t option{};
    option.maxHbmSize = 2 * kSlot;
    option.localHBMSize = ctx.rank == 0 ? kSlot : 2 * kSlot;
    option.dataOpType = SMEMB_DATA_OP_SDMA;
    option.dramShmFd = -1;
    smem_bm_t bm = smem_bm_create2(0, &option);
    ASSERT_NE(bm, nullptr) << smem_get_last_err_msg();
    EXPECT_EQ(smem_bm_get_local_mem_size_by_mem_type(bm, SMEM_MEM_TYPE_DEVICE),
              option.localHBMSize);
    EXPECT_EQ(device_slot(bm, 1) - device_slot(bm, 0), static_cast<ptrdiff_t>(2 * kSlot));
    ASSERT_SMEM_OK(smem_bm_join(bm, 0, nullptr));
    StoreBarrier barrier(ctx);
    barrier.wait();
    std::vector<uint8_t> buffer(4096, 1);
    EXPECT_SMEM_FAILS(bm_copy(bm, buffer.data(), device_slot(bm, 0) + kSlot, 16, SMEMB_COPY_H2G),
                      SMEM_INVALID_PARAM, "goes past the 2097152 bytes rank 0 contributes");
    ASSERT_SMEM_OK(bm_copy(bm, buffer.data(), device_slot(bm, 1) + kSlot, 16, SMEMB_COPY_H2G));
    barrier.wait();
    smem_bm_destroy(bm);
    smem_bm_uninit(0);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

// ptr_by_mem_type and get_rank_id_by_gva follow one stride rule, for both ranges, on both nodes.
TEST(BmTwoNodes, AddressQueriesAgree) {
  auto results = run_ranks(ranks_on_nodes(4, 2), [](const RankContext& ctx) {
    ASSERT_SMEM_OK(bm_init_rank(ctx));
    smem_bm_t bm = smem_bm_create(3, 4, SMEMB_DATA_OP_HOST_TCP, 2 * kSlot, kSlot, 0);
    ASSERT_NE(bm, nullptr) << smem_get_last_err_msg();
    EXPECT_EQ(smem_bm_get_local_mem_size_by_mem_type(bm, SMEM_MEM_TYPE_DEVICE), kSlot);
    EXPECT_EQ(smem_bm_get_local_mem_size_by_mem_type(bm, SMEM_MEM_TYPE_LOCAL_HOST), 2 * kSlot);
    EXPECT_EQ(smem_bm_get_local_mem_size(bm), kSlot);
    EXPECT_EQ(smem_bm_get_local_mem_size_by_mem_type(bm, SMEM_MEM_TYPE_BUTT), 0u);
    for (auto [type, stride] :
         {std::pair{SMEM_MEM_TYPE_DEVICE, kSlot}, std::pair{SMEM_MEM_TYPE_HOST, 2 * kSlot}}) {
      auto* base = static_cast<char*>(smem_bm_ptr_by_mem_type(bm, type, 0));
      ASSERT_NE(base, nullptr) << smem_get_last_err_msg();
      for (int r = 0; r < 4; ++r) {
        auto* slot =
            static_cast<char*>(smem_bm_ptr_by_mem_type(bm, type, static_cast<uint16_t>(r)));
        EXPECT_EQ(slot, base + r * stride);
        EXPECT_EQ(smem_bm_get_rank_id_by_gva(bm, slot), uint32_t(r));
        EXPECT_EQ(smem_bm_get_rank_id_by_gva(bm, slot + stride - 1), uint32_t(r));
      }
      EXPECT_EQ(smem_bm_get_rank_id_by_gva(bm, base + 4 * stride),
                static_cast<uint32_t>(SMEM_INVALID_PARAM));
      EXPECT_EQ(smem_bm_get_rank_id_by_gva(bm, base - 1),
                static_cast<uint32_t>(SMEM_INVALID_PARAM));
      EXPECT_EQ(smem_bm_ptr_by_mem_type(bm, type, 4), nullptr);
    }
    EXPECT_EQ(smem_bm_ptr(bm, 2), smem_bm_ptr_by_mem_type(bm, SMEM_MEM_TYPE_DEVICE, 2));
    EXPECT_EQ(
        smem_bm_ptr_by_mem_type(bm, SMEM_MEM_TYPE_LOCAL_HOST, static_cast<uint16_t>(ctx.rank)),
        smem_bm_ptr_by_mem_type(bm, SMEM_MEM_TYPE_HOST, static_cast<uint16_t>(ctx.rank)));
    EXPECT_EQ(smem_bm_ptr_by_mem_type(bm, SMEM_MEM_TYPE_LOCAL_DEVICE,
                                      static_cast<uint16_t>((ctx.rank + 1) % 4)),
              nullptr);
    EXPECT_TRUE(last_error_contains("own memory")) << smem_get_last_err_msg();
    // The same addresses in every process.
    StoreBarrier barrier(ctx);
    barrier.client().set("gva/" + ctx.job_id + "/" + std::to_string(ctx.rank),
                         std::to_string(reinterpret_cast<uintptr_t>(device_slot(bm, 0))));
    barrier.wait();
    for (int r = 0; r < 4; ++r) {
      auto value = barrier.client().get("gva/" + ctx.job_id + "/" + std::to_string(r),
                                        std::chrono::milliseconds(0));
      ASSERT_TRUE(value.has_value());
      EXPECT_EQ(*value, std::to_string(reinterpret_cast<uintptr_t>(device_slot(bm, 0))))
          << "rank " << r;
    }
    barrier.wait();
    smem_bm_destroy(bm);
    smem_bm_uninit(0);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

// Rank 1 leaves and joins again and again while rank 0 copies to it: every copy either succeeds or
// fails with SMEM_NOT_FOUND; once rank 1 has left for good, every copy fails.
void check_join_leave_while_copying(const RankContext& ctx) {
  ASSERT_SMEM_OK(bm_init_rank(ctx, 5));
  smem_bm_t bm = smem_bm_create(2, 2, SMEMB_DATA_OP_SDMA, kSlot, kSlot, 0);
  ASSERT_NE(bm, nullptr) << smem_get_last_err_msg();
  StoreBarrier barrier(ctx);
  const std::string churn_done = "churn-done/" + ctx.job_id;
  std::vector<uint8_t> buffer = pattern_buffer(ctx.rank, 64 * 1024);
  // The first join is collective: both return once both joined.
  ASSERT_SMEM_OK(smem_bm_join(bm, 0, nullptr));
  if (ctx.rank == 0) {
    barrier.wait();  // 1: rank 1 left
    EXPECT_SMEM_FAILS(bm_copy(bm, buffer.data(), device_slot(bm, 1), 4096, SMEMB_COPY_H2G),
                      SMEM_NOT_FOUND, "has not joined");
    barrier.wait();  // 1b: rank 0 saw it gone
    barrier.wait();  // 2: rank 1 joined again
    EXPECT_SMEM_OK(bm_copy(bm, buffer.data(), device_slot(bm, 1), 4096, SMEMB_COPY_H2G));
    barrier.wait();  // 3: churn begins
    int ok = 0, refused = 0;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (int i = 0;
         (i < 200 || ok == 0 || refused == 0) && std::chrono::steady_clock::now() < give_up; ++i) {
      int32_t rc =
          i % 2 ? bm_copy(bm, buffer.data(), host_slot(bm, 1), buffer.size(), SMEMB_COPY_H2GH)
                : bm_copy(bm, device_slot(bm, 1), buffer.data(), buffer.size(), SMEMB_COPY_G2H);
      ASSERT_TRUE(rc == SMEM_SUCCESS || rc == SMEM_NOT_FOUND)
          << rc << ": " << smem_get_last_err_msg();
      (rc == SMEM_SUCCESS ? ok : refused)++;
    }
    EXPECT_GT(ok, 0);
    EXPECT_GT(refused, 0);
    barrier.client().set(churn_done, "1");
    barrier.wait();  // 4: rank 1 left for good
    EXPECT_SMEM_FAILS(bm_copy(bm, buffer.data(), device_slot(bm, 1), 4096, SMEMB_COPY_H2G),
                      SMEM_NOT_FOUND, "rank 1");
    EXPECT_SMEM_FAILS(bm_copy(bm, host_slot(bm, 1), buffer.data(), 4096, SMEMB_COPY_GH2H),
                      SMEM_NOT_FOUND, "rank 1");
    // An asynchronous copy to it fails too, by smem_bm_wait at the latest.
    int32_t rc =
        bm_copy(bm, buffer.data(), device_slot(bm, 1), 4096, SMEMB_COPY_H2G, ASYNC_COPY_FLAG);
    if (rc == SMEM_SUCCESS) rc = smem_bm_wait(bm);
    EXPECT_EQ(rc, SMEM_NOT_FOUND) << smem_get_last_err_msg();
    ASSERT_SMEM_OK(smem_bm_wait(bm));  // the failure was reported once
    // Copies within this rank's own slot are unaffected.
    ASSERT_SMEM_OK(bm_copy(bm, buffer.data(), device_slot(bm, 0), 4096, SMEMB_COPY_H2G));
    barrier.wait();  // 5
  } else {
    ASSERT_SMEM_OK(smem_bm_leave(bm, 0));
    barrier.wait();                                // 1
    barrier.wait();                                // 1b
    ASSERT_SMEM_OK(smem_bm_join(bm, 0, nullptr));  // local: visible to rank 0 when it returns
    barrier.wait();                                // 2
    barrier.wait();                                // 3
    // Mostly joined, briefly gone, until rank 0 has seen both outcomes (bounded if it never says).
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (!barrier.client().get(churn_done, std::chrono::milliseconds(0)) &&
           std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::microseconds(1500));
      ASSERT_SMEM_OK(smem_bm_leave(bm, 0));
      std::this_thread::sleep_for(std::chrono::microseconds(500));
      ASSERT_SMEM_OK(smem_bm_join(bm, 0, nullptr));
    }
    ASSERT_SMEM_OK(smem_bm_leave(bm, 0));
    barrier.wait();  // 4
    barrier.wait();  // 5
  }
  smem_bm_destroy(bm);
  smem_bm_uninit(0);
}

TEST(BmMembership, JoinAndLeaveWhileCopyingOnOneNode) {
  auto results = run_ranks(ranks_on_nodes(2), check_join_leave_while_copying);
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(BmMembership, JoinAndLeaveWhileCopyingAcrossNodes) {
  auto results = run_ranks(ranks_on_nodes(2, 2), check_join_leave_while_copying);
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(BmUserMemory, RegistrationRulesAndCopies) {
  auto results = run_ranks(ranks_on_nodes(2), [](const RankContext& ctx) {
    ASSERT_SMEM_OK(bm_init_rank(ctx));
    smem_bm_t bm = smem_bm_create(4, 2, SMEMB_DATA_OP_SDMA, kSlot, kSlot, 0);
    ASSERT_NE(bm, nullptr) << smem_get_last_err_msg();
    ASSERT_SMEM_OK(smem_bm_join(bm, 0, nullptr));
    StoreBarrier barrier(ctx);
    barrier.wait();
    const size_t bytes = 64 * 1024;
    void* memory = std::aligned_alloc(4096, 2 * bytes);
    ASSERT_NE(memory, nullptr);
    auto address = reinterpret_cast<uint64_t>(memory);
    EXPECT_SMEM_FAILS(smem_bm_register_user_mem(bm, address + 8, bytes), SMEM_INVALID_PARAM,
                      "aligned");
    EXPECT_SMEM_FAILS(smem_bm_register_user_mem(bm, 0, bytes), SMEM_INVALID_PARAM, "addr is 0");
    EXPECT_SMEM_FAILS(smem_bm_register_user_mem(bm, address, 0), SMEM_INVALID_PARAM, "size is 0");
    EXPECT_SMEM_FAILS(
        smem_bm_register_user_mem(bm, reinterpret_cast<uint64_t>(host_slot(bm, 0)), 4096),
        SMEM_INVALID_PARAM, "overlaps the host range");
    ASSERT_SMEM_OK(smem_bm_register_user_mem(bm, address, bytes));
    EXPECT_SMEM_FAILS(smem_bm_register_user_mem(bm, address + 4096, bytes), SMEM_INVALID_PARAM,
                      "overlaps memory registered before");
    ASSERT_SMEM_OK(smem_bm_register_user_mem(bm, address + bytes, bytes));  // adjacent is fine

    auto* registered = static_cast<uint8_t*>(memory);
    auto mine = pattern_buffer(ctx.rank, bytes, 2);
    std::memcpy(registered, mine.data(), bytes);
    const int peer = 1 - ctx.rank;
    ASSERT_SMEM_OK(bm_copy(bm, registered, host_slot(bm, peer), bytes, SMEMB_COPY_H2GH));
    barrier.wait();
    ASSERT_SMEM_OK(
        bm_copy(bm, host_slot(bm, ctx.rank), registered + bytes, bytes, SMEMB_COPY_GH2H));
    EXPECT_EQ(0, std::memcmp(registered + bytes, pattern_buffer(peer, bytes, 2).data(), bytes));

    EXPECT_SMEM_FAILS(smem_bm_unregister_user_mem(bm, address + 4096), SMEM_NOT_FOUND,
                      "no user memory");
    ASSERT_SMEM_OK(smem_bm_unregister_user_mem(bm, address));
    EXPECT_SMEM_FAILS(smem_bm_unregister_user_mem(bm, address), SMEM_NOT_FOUND, "no user memory");
    barrier.wait();
    smem_bm_destroy(bm);  // also drops the registration left at address + bytes
    std::free(memory);
    smem_bm_uninit(0);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(BmWorld, AutoRankingHandsOutEveryRankOnce) {
  MultiProcessOptions options = ranks_on_nodes(4);
  options.start_store = false;
  const std::string url = "tcp://127.0.0.1:" + std::to_string(free_tcp_port());
  auto results = run_ranks(options, [&](const RankContext& ctx) {
    smem_bm_config_t config = bm_test_config();
    config.autoRanking = true;
    config.startConfigStoreServer = true;  // whichever process binds first serves the store
    config.rankId = 999;                   // ignored with auto ranking
    ASSERT_SMEM_OK(smem_bm_init(url.c_str(), 4, static_cast<uint16_t>(ctx.device()), &config));
    const uint32_t rank = smem_bm_get_rank_id();
    ASSERT_LT(rank, 4u);
    smem_bm_t bm = smem_bm_create(0, 4, SMEMB_DATA_OP_SDMA, 0, kSlot, 0);
    ASSERT_NE(bm, nullptr) << smem_get_last_err_msg();
    ASSERT_SMEM_OK(smem_bm_join(bm, 0, nullptr));
    // Each rank stamps its id into slot `rank` of rank 0; distinct ids fill all four stamps.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    uint32_t stamp = 0xabc00000u + rank;
    int32_t rc = SMEM_NOT_FOUND;
    for (int i = 0; i < 200 && rc == SMEM_NOT_FOUND; ++i) {  // rank 0 may join a bit later
      rc = bm_copy(bm, &stamp, device_slot(bm, 0) + rank * 64, sizeof(stamp), SMEMB_COPY_H2G);
      if (rc == SMEM_NOT_FOUND) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_SMEM_OK(rc);
    if (rank == 0) {
      std::set<uint32_t> seen;
      for (int i = 0; i < 500 && seen.size() < 4; ++i) {
        seen.clear();
        for (uint32_t r = 0; r < 4; ++r) {
          uint32_t value = 0;
          ASSERT_SMEM_OK(
              bm_copy(bm, device_slot(bm, 0) + r * 64, &value, sizeof(value), SMEMB_COPY_G2H));
          if (value == 0xabc00000u + r) seen.insert(r);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      EXPECT_EQ(seen.size(), 4u);
    }
    // Nobody leaves before rank 0 has seen every stamp: the store (in one of the ranks) must stay.
    smem_bm_t done = smem_bm_create(1, 4, SMEMB_DATA_OP_SDMA, 0, kSlot, 0);
    ASSERT_NE(done, nullptr) << smem_get_last_err_msg();
    smem_bm_uninit(0);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

// Process 0 only serves the config store; processes 1 and 2 form a world of two ranks through it.
TEST(BmWorld, StoreOnlyProcessServesTheOthers) {
  MultiProcessOptions options = ranks_on_nodes(3);
  options.start_store = false;
  // Creating the world and two objects makes three NCCL communicators on GPUs, which took more
  // than 30 s with a dozen tests sharing two H200s.
  options.timeout = std::chrono::seconds(120);
  const std::string url = "tcp://127.0.0.1:" + std::to_string(free_tcp_port());
  auto results = run_ranks(options, [&](const RankContext& ctx) {
    smem_bm_config_t config = bm_test_config();
    if (ctx.rank == 0) {
      config.startConfigStoreOnly = true;
      ASSERT_SMEM_OK(smem_bm_init(url.c_str(), 2, 0, &config));
      EXPECT_EQ(smem_bm_get_rank_id(), UINT32_MAX);
      EXPECT_EQ(smem_bm_create(0, 2, SMEMB_DATA_OP_SDMA, 0, kSlot, 0), nullptr);
      EXPECT_TRUE(last_error_contains("only runs the config store")) << smem_get_last_err_msg();
      // Serve until both ranks are done.
      auto client = store::Client::connect(url);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(110);
      while (std::stoll(client->get("done", std::chrono::milliseconds(0)).value_or("0")) < 2 &&
             std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      client.reset();
      smem_bm_uninit(0);
      return;
    }
    config.rankId = static_cast<uint16_t>(ctx.rank - 1);
    config.autoRanking = false;
    ASSERT_SMEM_OK(smem_bm_init(url.c_str(), 2, static_cast<uint16_t>(ctx.device()), &config));
    EXPECT_EQ(smem_bm_get_rank_id(), uint32_t(ctx.rank - 1));
    smem_bm_t bm = smem_bm_create(0, 2, SMEMB_DATA_OP_SDMA, 0, kSlot, 0);
    ASSERT_NE(bm, nullptr) << smem_get_last_err_msg();
    // memberSize is reserved (MemFabric ignores it): every object spans the world.
    smem_bm_t other = smem_bm_create(1, 1, SMEMB_DATA_OP_SDMA, 0, kSlot, 0);
    ASSERT_NE(other, nullptr) << smem_get_last_err_msg();
    smem_bm_destroy(other);
    smem_bm_destroy(bm);
    auto client = store::Client::connect(url);
    client->add("done", 1);
    client.reset();
    smem_bm_uninit(0);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(BmFailures, DeadPeersFailWithinTheTimeouts) {
  auto results = run_ranks(ranks_on_nodes(2, 2), [](const RankContext& ctx) {
    smem_bm_config_t config = bm_test_config(2);
    config.createTimeout = 2;
    config.rankId = static_cast<uint16_t>(ctx.rank);
    config.autoRanking = false;
    ASSERT_SMEM_OK(smem_bm_init(ctx.store_url.c_str(), 2, 0, &config));
    smem_bm_t bm = smem_bm_create(0, 2, SMEMB_DATA_OP_SDMA, 0, kSlot, 0);
    ASSERT_NE(bm, nullptr) << smem_get_last_err_msg();
    ASSERT_SMEM_OK(smem_bm_join(bm, 0, nullptr));
    StoreBarrier barrier(ctx);
    barrier.wait();
    if (ctx.rank == 1) return;  // dies joined, without leaving
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::vector<uint8_t> buffer(4096);
    auto start = std::chrono::steady_clock::now();
    int32_t rc = bm_copy(bm, buffer.data(), device_slot(bm, 1), buffer.size(), SMEMB_COPY_H2G);
    EXPECT_TRUE(rc == SMEM_COMM_ERROR || rc == SMEM_TIMEOUT || rc == SMEM_NOT_FOUND)
        << rc << ": " << smem_get_last_err_msg();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(6));
    // A collective create with the dead rank fails at the create timeout.
    start = std::chrono::steady_clock::now();
    EXPECT_EQ(smem_bm_create(1, 2, SMEMB_DATA_OP_SDMA, 0, kSlot, 0), nullptr);
    EXPECT_STRNE(smem_get_last_err_msg(), "");
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(6));
    smem_bm_destroy(bm);
    smem_bm_uninit(0);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::testing
