// The config store server is SIGKILLed. Calls blocked on it (a get, an init or a communicator
// waiting for a rank that never comes) must fail promptly (the connection closed: no need to wait
// for the deadline); calls that need it later fail at once; calls that do not need it (collectives
// of groups already built, transfers to peers already known) keep working. Every rank then shuts
// down cleanly and leaves nothing behind.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>

#include "smem/host/smem_bm.h"
#include "smem/host/smem_shm.h"
#include "smem/host/smem_trans.h"
#include "src/base/log.h"
#include "src/core/group.h"
#include "src/store/client.h"
#include "tests/faults/process_audit.h"
#include "tests/faults/scenarios.h"
#include "wholememory/wholememory.h"

namespace memloom::faults {
namespace {

// Blocked calls get this deadline; they must fail well before it.
constexpr uint32_t kLongTimeoutSeconds = 10;
constexpr auto kPromptly = std::chrono::seconds(5);
constexpr auto kKillAfter = std::chrono::milliseconds(300);
constexpr int kRanks = 3;

std::string store_url() {
  return std::getenv("MEMLOOM_STORE_URL");
}

int store_pid() {
  return std::atoi(std::getenv("FAULT_STORE_PID"));
}

// The store process is a zombie (its parent, the test, reaps it at the end) or gone.
void wait_for_store_death() {
  const auto end = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < end) {
    std::ifstream stat("/proc/" + std::to_string(store_pid()) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t paren = text.rfind(')');
    if (text.empty() || (paren != std::string::npos && text.compare(paren + 2, 1, "Z") == 0)) {
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ADD_FAILURE() << "the store process did not die";
}

// Every rank has passed `barrier` and is (about to be) in its call when the store dies.
void kill_store_later(const std::string& barrier, int size) {
  await_all_left_barrier(store_url(), barrier, size);
  std::thread([] {
    std::this_thread::sleep_for(kKillAfter);
    ::kill(store_pid(), SIGKILL);
  }).detach();
}

void kill_store_now(const std::string& barrier, int size) {
  await_all_left_barrier(store_url(), barrier, size);
  ::kill(store_pid(), SIGKILL);
}

CallResult smem_result(int32_t code) {
  if (code == SMEM_SUCCESS) return {};
  return {code, smem_get_last_err_msg()};
}

// Runs `body` on kRanks ranks that share a store the test can kill, then checks the leftovers.
void run_with_killable_store(const std::function<void(const testing::RankContext&)>& body) {
  JobAudit job;
  StoreProcess store;
  testing::MultiProcessOptions options;
  options.ranks = kRanks;
  options.start_store = false;
  options.timeout = std::chrono::seconds(60);
  options.env = fault_environment();
  options.env["MEMLOOM_STORE_URL"] = store.url();
  options.env["FAULT_STORE_PID"] = std::to_string(store.pid());
  auto results = testing::run_ranks(options, [&](const testing::RankContext& rank) {
    RankAudit audit;
    body(rank);
    audit.expect_nothing_left("rank " + std::to_string(rank.rank) + " after shutdown");
  });
  EXPECT_ALL_RANKS_PASS(results);
  job.expect_nothing_left();
}

// Every rank makes `call`, which blocks on the store; rank 0 kills the store meanwhile.
void expect_prompt_failure(const testing::RankContext& rank,
                           const std::function<CallResult()>& call) {
  const std::string barrier = rank.job_id + "/before-call";
  store_barrier(store_url(), barrier, rank.world_size);
  if (rank.rank == 0) kill_store_later(barrier, rank.world_size);
  const auto start = Clock::now();
  CallResult result = call();
  const auto took = Clock::now() - start;
  EXPECT_TRUE(result.failed()) << "the call succeeded without the store";
  EXPECT_FALSE(result.message.empty());
  EXPECT_LT(took, kPromptly) << "failed after "
                             << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                             << " ms (its deadline: " << kLongTimeoutSeconds
                             << " s); message: " << result.message;
}

TEST(StoreDeath, BlockedGetFailsPromptlyAndLaterOpsFailAtOnce) {
  run_with_killable_store([](const testing::RankContext& rank) {
    auto client = store::Client::connect(store_url());
    expect_prompt_failure(rank, [&] {
      return core_call([&] {
        client->get(rank.job_id + "/never-set", std::chrono::seconds(kLongTimeoutSeconds));
      });
    });
    const auto start = Clock::now();
    CallResult later = core_call([&] { client->add("counter", 1); });
    EXPECT_EQ(later.code, static_cast<int>(Status::kCommunication)) << later.message;
    // "At once": well inside the 10 s deadline it would otherwise wait out, with room for a
    // heavily loaded machine's scheduling delays.
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
    EXPECT_FALSE(client->connected());
  });
}

TEST(StoreDeath, GroupWaitingForAMissingRankFailsPromptly) {
  run_with_killable_store([](const testing::RankContext& rank) {
    std::shared_ptr<store::Client> client = store::Client::connect(store_url());
    expect_prompt_failure(rank, [&] {
      return core_call([&] {
        core::Group::create(client, store::KeyPrefix(rank.job_id + "/group/"), rank.rank,
                            rank.world_size + 1, Deadline::after(std::chrono::seconds(10)));
      });
    });
  });
}

TEST(StoreDeath, ShmInitWaitingForAMissingRankFailsPromptly) {
  run_with_killable_store([](const testing::RankContext& rank) {
    smem_shm_config_t config;
    smem_shm_config_init(&config);
    config.startConfigStoreServer = false;
    config.shmInitTimeout = kLongTimeoutSeconds;
    expect_prompt_failure(rank, [&] {
      return smem_result(smem_shm_init(store_url().c_str(), rank.world_size + 1, rank.rank,
                                       static_cast<uint16_t>(rank.device()), &config));
    });
    smem_shm_uninit(0);
  });
}

TEST(StoreDeath, BmInitWaitingForAMissingRankFailsPromptly) {
  run_with_killable_store([](const testing::RankContext& rank) {
    smem_bm_config_t config;
    smem_bm_config_init(&config);
    config.startConfigStoreServer = false;
    config.initTimeout = kLongTimeoutSeconds;
    config.rankId = static_cast<uint16_t>(rank.rank);
    config.autoRanking = false;
    expect_prompt_failure(rank, [&] {
      return smem_result(smem_bm_init(store_url().c_str(), rank.world_size + 1,
                                      static_cast<uint16_t>(rank.device()), &config));
    });
    smem_bm_uninit(0);
  });
}

TEST(StoreDeath, WholeMemoryCommunicatorWaitingForAMissingRankFailsPromptly) {
  run_with_killable_store([](const testing::RankContext& rank) {
    ::setenv("MEMLOOM_TIMEOUT_S", std::to_string(kLongTimeoutSeconds).c_str(), 1);
    ASSERT_EQ(wholememory_init(0, LEVEL_FATAL), WHOLEMEMORY_SUCCESS);
    wholememory_unique_id_t id{};
    if (rank.rank == 0) {
      ASSERT_EQ(wholememory_create_unique_id(&id), WHOLEMEMORY_SUCCESS);
      publish(store_url(), rank.job_id + "/id", std::string(id.internal, sizeof(id.internal)));
    } else {
      std::memcpy(id.internal, await(store_url(), rank.job_id + "/id").data(), sizeof(id));
    }
    expect_prompt_failure(rank, [&] {
      wholememory_comm_t comm = nullptr;
      auto code = wholememory_create_communicator(&comm, id, rank.rank, rank.world_size + 1);
      return code == WHOLEMEMORY_SUCCESS ? CallResult{}
                                         : CallResult{static_cast<int>(code), log::last_error()};
    });
    EXPECT_EQ(wholememory_finalize(), WHOLEMEMORY_SUCCESS);
  });
}

// Groups built before the store died do not need it: their collectives keep working, new objects
// can still be created on them, and shutdown does not wait for the store.
TEST(StoreDeath, ShmObjectsBuiltBeforeKeepWorkingAndShutDown) {
  run_with_killable_store([](const testing::RankContext& rank) {
    smem_shm_config_t config;
    smem_shm_config_init(&config);
    config.startConfigStoreServer = false;
    config.shmInitTimeout = 20;
    config.shmCreateTimeout = kLongTimeoutSeconds;
    config.controlOperationTimeout = kLongTimeoutSeconds;
    ASSERT_EQ(smem_shm_init(store_url().c_str(), rank.world_size, rank.rank,
                            static_cast<uint16_t>(rank.device()), &config),
              SMEM_SUCCESS)
        << smem_get_last_err_msg();
    void* gva = nullptr;
    smem_shm_t shm =
        smem_shm_create(0, rank.world_size, rank.rank, 2 << 20, SMEMS_DATA_OP_MTE, 0, &gva);
    ASSERT_NE(shm, nullptr) << smem_get_last_err_msg();
    store_barrier(store_url(), rank.job_id + "/built", rank.world_size);
    if (rank.rank == 0) kill_store_now(rank.job_id + "/built", rank.world_size);
    EXPECT_EQ(smem_shm_control_barrier(shm), SMEM_SUCCESS) << smem_get_last_err_msg();
    const auto start = Clock::now();
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(smem_shm_control_barrier(shm), SMEM_SUCCESS) << smem_get_last_err_msg();
    }
    smem_shm_t second =
        smem_shm_create(1, rank.world_size, rank.rank, 2 << 20, SMEMS_DATA_OP_MTE, 0, &gva);
    if (second == nullptr) {
      // Allowed to need the store, but then it must say so promptly.
      EXPECT_LT(Clock::now() - start, kPromptly) << smem_get_last_err_msg();
    } else {
      EXPECT_EQ(smem_shm_destroy(second, 0), SMEM_SUCCESS);
    }
    EXPECT_EQ(smem_shm_destroy(shm, 0), SMEM_SUCCESS) << smem_get_last_err_msg();
    smem_shm_uninit(0);
    EXPECT_LT(Clock::now() - start, kPromptly) << "calls or shutdown waited for the dead store";
  });
}

// TRANS looks peers up in the store: a peer already contacted stays reachable, a new one fails
// at once with a message.
TEST(StoreDeath, TransKnownPeersStayReachableNewOnesFailAtOnce) {
  ForkedBarrier finished;  // no instance is destroyed while a peer may still write to it
  run_with_killable_store([&](const testing::RankContext& rank) {
    smem_trans_config_t config;
    smem_trans_config_init(&config);
    config.role = SMEM_TRANS_BOTH;
    config.initTimeout = kLongTimeoutSeconds;
    ASSERT_EQ(smem_trans_init(&config), SMEM_SUCCESS);
    const std::string id = free_loopback_id();
    smem_trans_t handle = smem_trans_create(store_url().c_str(), id.c_str(), &config);
    ASSERT_NE(handle, nullptr) << smem_get_last_err_msg();
    std::vector<char> memory(1 << 20, static_cast<char>(rank.rank));
    ASSERT_EQ(smem_trans_register_mem(handle, memory.data(), memory.size(), 0), SMEM_SUCCESS);
    publish(store_url(), rank.job_id + "/peer" + std::to_string(rank.rank),
            id + " " + std::to_string(reinterpret_cast<uintptr_t>(memory.data())));
    auto peer = [&](int r) {
      std::string text = await(store_url(), rank.job_id + "/peer" + std::to_string(r));
      auto space = text.find(' ');
      return std::make_pair(text.substr(0, space),
                            reinterpret_cast<char*>(std::stoull(text.substr(space + 1))));
    };
    const int known = (rank.rank + 1) % rank.world_size;
    const int unknown = (rank.rank + 2) % rank.world_size;
    auto [known_id, known_memory] = peer(known);
    auto [unknown_id, unknown_memory] = peer(unknown);
    std::vector<char> local(4096, 7);
    ASSERT_EQ(smem_trans_write(handle, local.data(), known_id.c_str(), known_memory, 4096, 0),
              SMEM_SUCCESS)
        << smem_get_last_err_msg();
    store_barrier(store_url(), rank.job_id + "/contacted", rank.world_size);
    if (rank.rank == 0) kill_store_now(rank.job_id + "/contacted", rank.world_size);
    wait_for_store_death();
    EXPECT_EQ(smem_trans_write(handle, local.data(), known_id.c_str(), known_memory, 4096, 0),
              SMEM_SUCCESS)
        << smem_get_last_err_msg();
    const auto start = Clock::now();
    const int32_t code =
        smem_trans_write(handle, local.data(), unknown_id.c_str(), unknown_memory, 4096, 0);
    EXPECT_TRUE(code == SMEM_COMM_ERROR || code == SMEM_NOT_FOUND)
        << code << ": " << smem_get_last_err_msg();
    EXPECT_STRNE(smem_get_last_err_msg(), "");
    EXPECT_LT(Clock::now() - start, kPromptly);
    finished.wait(rank.world_size);
    smem_trans_destroy(handle, 0);
    smem_trans_uninit(0);
    EXPECT_LT(Clock::now() - start, kPromptly) << "shutdown waited for the dead store";
  });
}

}  // namespace
}  // namespace memloom::faults
