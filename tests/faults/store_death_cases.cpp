#include "tests/faults/store_death_cases.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "smem/host/smem_bm.h"
#include "smem/host/smem_shm.h"
#include "smem/host/smem_trans.h"
#include "src/base/log.h"
#include "src/core/group.h"
#include "src/store/client.h"
#include "tests/faults/scenarios.h"
#include "wholememory/wholememory.h"

namespace memloom::faults {
namespace {

// Long enough that every rank is in its call, short next to every bound.
constexpr auto kKillAfter = std::chrono::milliseconds(300);
constexpr int kRanks = 3;

long long milliseconds(Clock::duration duration) {
  return static_cast<long long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(duration).count());
}

CallResult smem_result(int32_t code) {
  if (code == SMEM_SUCCESS) return {};
  return {code, smem_get_last_err_msg()};
}

// Every rank has passed `barrier` (so none still polls the store for it) when the store dies.
void kill_store_now(const testing::RankContext& rank, const KillableStore& store,
                    const std::string& barrier) {
  await_all_left_barrier(store.url, barrier, rank.world_size);
  store.kill();
}

}  // namespace

void run_with_killable_store(const KillableStore& store,
                             const std::function<void(const testing::RankContext&)>& body) {
  JobAudit job;
  testing::MultiProcessOptions options;
  options.ranks = kRanks;
  options.timeout = std::chrono::seconds(60);
  options.env = fault_environment();
  options.store_url = store.url;
  auto results = testing::run_ranks(options, [&](const testing::RankContext& rank) {
    RankAudit audit;
    body(rank);
    audit.expect_nothing_left("rank " + std::to_string(rank.rank) + " after shutdown");
  });
  EXPECT_ALL_RANKS_PASS(results);
  job.expect_nothing_left();
}

void expect_failure_when_store_dies(const testing::RankContext& rank, const KillableStore& store,
                                    const std::function<CallResult()>& call) {
  const std::string barrier = rank.job_id + "/before-call";
  store_barrier(store.url, barrier, rank.world_size);
  if (rank.rank == 0) {
    await_all_left_barrier(store.url, barrier, rank.world_size);
    std::thread([kill = store.kill] {
      std::this_thread::sleep_for(kKillAfter);
      kill();
    }).detach();
  }
  const auto start = Clock::now();
  CallResult result = call();
  const auto took = Clock::now() - start;
  EXPECT_TRUE(result.failed()) << "the call succeeded without the store";
  EXPECT_FALSE(result.message.empty());
  EXPECT_LT(took, store.fail_within)
      << "failed after " << milliseconds(took) << " ms (its deadline: " << store.wait_seconds
      << " s); message: " << result.message;
  if (rank.rank == 0) {
    // How soon each store notices, for the log of a run that passes too.
    std::printf("[store killed] failed after %lld ms: %s\n", milliseconds(took),
                result.message.c_str());
  }
}

Clock::duration KillableStore::after_death(int store_calls, std::chrono::seconds call_time) const {
  if (dead_store_fails_calls_at_once) return fail_within;
  return store_calls * call_time + kSlack;
}

void wait_for_store_death(const KillableStore& store) {
  const auto end = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < end) {
    std::ifstream stat("/proc/" + std::to_string(store.pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t paren = text.rfind(')');
    if (text.empty() || (paren != std::string::npos && text.compare(paren + 2, 1, "Z") == 0)) {
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ADD_FAILURE() << "the store process did not die";
}

void group_waiting_for_a_missing_rank(const KillableStore& store) {
  run_with_killable_store(store, [&](const testing::RankContext& rank) {
    std::shared_ptr<store::Client> client = store::Client::connect(store.url);
    expect_failure_when_store_dies(rank, store, [&] {
      return core_call([&] {
        core::Group::create(client, store::KeyPrefix(rank.job_id + "/group/"), rank.rank,
                            rank.world_size + 1,
                            Deadline::after(std::chrono::seconds(store.wait_seconds)));
      });
    });
  });
}

void shm_init_waiting_for_a_missing_rank(const KillableStore& store) {
  run_with_killable_store(store, [&](const testing::RankContext& rank) {
    smem_shm_config_t config;
    smem_shm_config_init(&config);
    config.startConfigStoreServer = false;
    config.shmInitTimeout = store.wait_seconds;
    expect_failure_when_store_dies(rank, store, [&] {
      return smem_result(smem_shm_init(store.url.c_str(), rank.world_size + 1, rank.rank,
                                       static_cast<uint16_t>(rank.device()), &config));
    });
    smem_shm_uninit(0);
  });
}

void bm_init_waiting_for_a_missing_rank(const KillableStore& store) {
  run_with_killable_store(store, [&](const testing::RankContext& rank) {
    smem_bm_config_t config;
    smem_bm_config_init(&config);
    config.startConfigStoreServer = false;
    config.initTimeout = store.wait_seconds;
    config.rankId = static_cast<uint16_t>(rank.rank);
    config.autoRanking = false;
    expect_failure_when_store_dies(rank, store, [&] {
      return smem_result(smem_bm_init(store.url.c_str(), rank.world_size + 1,
                                      static_cast<uint16_t>(rank.device()), &config));
    });
    smem_bm_uninit(0);
  });
}

void wholememory_communicator_waiting_for_a_missing_rank(const KillableStore& store) {
  run_with_killable_store(store, [&](const testing::RankContext& rank) {
    ::setenv("MEMLOOM_TIMEOUT_S", std::to_string(store.wait_seconds).c_str(), 1);
    ASSERT_EQ(wholememory_init(0, LEVEL_FATAL), WHOLEMEMORY_SUCCESS);
    wholememory_unique_id_t id{};
    if (rank.rank == 0) {
      ASSERT_EQ(wholememory_create_unique_id(&id), WHOLEMEMORY_SUCCESS);
      publish(store.url, rank.job_id + "/id", std::string(id.internal, sizeof(id.internal)));
    } else {
      std::memcpy(id.internal, await(store.url, rank.job_id + "/id").data(), sizeof(id));
    }
    expect_failure_when_store_dies(rank, store, [&] {
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
void shm_objects_built_before_keep_working(const KillableStore& store) {
  run_with_killable_store(store, [&](const testing::RankContext& rank) {
    smem_shm_config_t config;
    smem_shm_config_init(&config);
    config.startConfigStoreServer = false;
    // Room for three ranks to start on a loaded machine; also each store call's time on etcd.
    const uint32_t init_seconds = 2 * store.wait_seconds;
    config.shmInitTimeout = init_seconds;
    config.shmCreateTimeout = store.wait_seconds;
    config.controlOperationTimeout = store.wait_seconds;
    ASSERT_EQ(smem_shm_init(store.url.c_str(), rank.world_size, rank.rank,
                            static_cast<uint16_t>(rank.device()), &config),
              SMEM_SUCCESS)
        << smem_get_last_err_msg();
    void* gva = nullptr;
    smem_shm_t shm =
        smem_shm_create(0, rank.world_size, rank.rank, 2 << 20, SMEMS_DATA_OP_MTE, 0, &gva);
    ASSERT_NE(shm, nullptr) << smem_get_last_err_msg();
    store_barrier(store.url, rank.job_id + "/built", rank.world_size);
    if (rank.rank == 0) kill_store_now(rank, store, rank.job_id + "/built");
    EXPECT_EQ(smem_shm_control_barrier(shm), SMEM_SUCCESS) << smem_get_last_err_msg();
    const auto start = Clock::now();
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(smem_shm_control_barrier(shm), SMEM_SUCCESS) << smem_get_last_err_msg();
    }
    smem_shm_t second =
        smem_shm_create(1, rank.world_size, rank.rank, 2 << 20, SMEMS_DATA_OP_MTE, 0, &gva);
    // The store calls left: the second create's first one, and at shutdown this object's
    // clean-up of its keys and the client's as it closes. Each has the deadline of the call that
    // makes it (the create's and the destroy's: wait_seconds), never the init timeout the client
    // was opened with (init_seconds, twice as long).
    const auto calls_within = [&](int calls) {
      return store.after_death(calls, std::chrono::seconds(store.wait_seconds));
    };
    if (second == nullptr) {
      // Allowed to need the store, but then it must say so within the store's bound.
      EXPECT_LT(Clock::now() - start, calls_within(1)) << smem_get_last_err_msg();
    } else {
      EXPECT_EQ(smem_shm_destroy(second, 0), SMEM_SUCCESS);
    }
    EXPECT_EQ(smem_shm_destroy(shm, 0), SMEM_SUCCESS) << smem_get_last_err_msg();
    smem_shm_uninit(0);
    EXPECT_LT(Clock::now() - start, calls_within(3))
        << "calls or shutdown waited for the dead store";
  });
}

// TRANS looks peers up in the store: a peer already contacted stays reachable, a new one fails
// within the store's bound with a message.
void trans_known_peers_stay_reachable(const KillableStore& store) {
  ForkedBarrier finished;  // no instance is destroyed while a peer may still write to it
  run_with_killable_store(store, [&](const testing::RankContext& rank) {
    smem_trans_config_t config;
    smem_trans_config_init(&config);
    config.role = SMEM_TRANS_BOTH;
    config.initTimeout = store.wait_seconds;
    ASSERT_EQ(smem_trans_init(&config), SMEM_SUCCESS);
    const std::string id = free_loopback_id();
    smem_trans_t handle = smem_trans_create(store.url.c_str(), id.c_str(), &config);
    ASSERT_NE(handle, nullptr) << smem_get_last_err_msg();
    std::vector<char> memory(1 << 20, static_cast<char>(rank.rank));
    ASSERT_EQ(smem_trans_register_mem(handle, memory.data(), memory.size(), 0), SMEM_SUCCESS);
    publish(store.url, rank.job_id + "/peer" + std::to_string(rank.rank),
            id + " " + std::to_string(reinterpret_cast<uintptr_t>(memory.data())));
    auto peer = [&](int r) {
      std::string text = await(store.url, rank.job_id + "/peer" + std::to_string(r));
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
    store_barrier(store.url, rank.job_id + "/contacted", rank.world_size);
    if (rank.rank == 0) kill_store_now(rank, store, rank.job_id + "/contacted");
    wait_for_store_death(store);
    EXPECT_EQ(smem_trans_write(handle, local.data(), known_id.c_str(), known_memory, 4096, 0),
              SMEM_SUCCESS)
        << smem_get_last_err_msg();
    const auto start = Clock::now();
    const int32_t code =
        smem_trans_write(handle, local.data(), unknown_id.c_str(), unknown_memory, 4096, 0);
    EXPECT_TRUE(code == SMEM_COMM_ERROR || code == SMEM_NOT_FOUND)
        << code << ": " << smem_get_last_err_msg();
    EXPECT_STRNE(smem_get_last_err_msg(), "");
    EXPECT_LT(Clock::now() - start, store.fail_within);
    finished.wait(rank.world_size);
    smem_trans_destroy(handle, 0);
    smem_trans_uninit(0);
    // The unknown peer's look-up, then at shutdown unpublishing this instance's address and the
    // client's clean-up of its write receipts as it closes (etcd).
    EXPECT_LT(Clock::now() - start, store.after_death(3, std::chrono::seconds(store.wait_seconds)))
        << "shutdown waited for the dead store";
  });
}

}  // namespace memloom::faults
