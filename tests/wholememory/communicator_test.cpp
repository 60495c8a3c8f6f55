// Communicators: unique ids, rank/size/node queries, cliques, split, barrier, destroy and the
// bad-input cases, on 1..8 ranks over one and two emulated nodes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "memloom/error.h"
#include "src/wholememory/unique_id.h"
#include "tests/wholememory/wm_test_support.h"

namespace memloom::wmtest {
namespace {

struct Topology {
  int ranks;
  int nodes;
};

std::string topology_name(const ::testing::TestParamInfo<Topology>& info) {
  return std::to_string(info.param.ranks) + "ranks" + std::to_string(info.param.nodes) + "nodes";
}

class CommunicatorTopology : public ::testing::TestWithParam<Topology> {};

TEST_P(CommunicatorTopology, ReportsRanksNodesAndCliques) {
  const auto topology = GetParam();
  auto results = run_with_comm(
      ranks_on_nodes(topology.ranks, topology.nodes),
      [&](const testing::RankContext& context, wholememory_comm_t comm) {
        int rank = -1, size = -1, local_size = -1;
        WM_ASSERT_OK(wholememory_communicator_get_rank(&rank, comm));
        WM_ASSERT_OK(wholememory_communicator_get_size(&size, comm));
        WM_ASSERT_OK(wholememory_communicator_get_local_size(&local_size, comm));
        EXPECT_EQ(context.rank, rank);
        EXPECT_EQ(context.world_size, size);
        EXPECT_EQ(context.local_size, local_size);

        clique_info_t clique{};
        WM_ASSERT_OK(wholememory_communicator_get_clique_info(&clique, comm));
        EXPECT_EQ(1, clique.is_in_clique);
        EXPECT_EQ(context.rank - context.local_rank, clique.clique_first_rank);
        EXPECT_EQ(context.local_rank, clique.clique_rank);
        EXPECT_EQ(context.local_size, clique.clique_rank_num);
        EXPECT_EQ(context.node_index, clique.clique_id);
        EXPECT_EQ(topology.nodes, clique.clique_num);

        const bool one_node = topology.nodes == 1;
        EXPECT_EQ(one_node, wholememory_is_intranode_communicator(comm));
        EXPECT_EQ(one_node, wholememory_is_intra_mnnvl_communicator(comm));
        for (auto location : {WHOLEMEMORY_ML_DEVICE, WHOLEMEMORY_ML_HOST}) {
          for (auto type : {WHOLEMEMORY_MT_CONTINUOUS, WHOLEMEMORY_MT_CHUNKED}) {
            EXPECT_EQ(one_node ? WHOLEMEMORY_SUCCESS : WHOLEMEMORY_NOT_SUPPORTED,
                      wholememory_communicator_support_type_location(comm, type, location));
          }
          for (auto type : {WHOLEMEMORY_MT_DISTRIBUTED, WHOLEMEMORY_MT_HIERARCHY}) {
            WM_EXPECT_OK(wholememory_communicator_support_type_location(comm, type, location));
          }
        }
        EXPECT_EQ(WHOLEMEMORY_NOT_SUPPORTED, wholememory_communicator_support_type_location(
                                                 comm, WHOLEMEMORY_MT_NONE, WHOLEMEMORY_ML_HOST));

        EXPECT_FALSE(wholememory_communicator_is_bind_to_nvshmem(comm));
        EXPECT_EQ(WHOLEMEMORY_DB_NCCL, wholememory_communicator_get_distributed_backend(comm));
        WM_EXPECT_OK(wholememory_communicator_set_distributed_backend(comm, WHOLEMEMORY_DB_NCCL));
        EXPECT_EQ(WHOLEMEMORY_NOT_SUPPORTED,
                  wholememory_communicator_set_distributed_backend(comm, WHOLEMEMORY_DB_NVSHMEM));
        WM_EXPECT_OK(wholememory_communicator_barrier(comm));
        WM_EXPECT_OK(wholememory_destroy_communicator(comm));
        EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_communicator_barrier(comm));
      });
  EXPECT_ALL_RANKS_PASS(results);
}

INSTANTIATE_TEST_SUITE_P(WholeMemory, CommunicatorTopology,
                         ::testing::Values(Topology{1, 1}, Topology{2, 1}, Topology{4, 1},
                                           Topology{8, 1}, Topology{2, 2}, Topology{4, 2},
                                           Topology{8, 2}),
                         topology_name);

TEST(WholeMemoryCommunicator, SplitsBySeveralColorsOrderedByKey) {
  // 8 ranks on 2 nodes: colors 0, 1, 2 by rank % 3, rank 7 without color; keys reverse the order.
  auto results = run_with_comm(
      ranks_on_nodes(8, 2), [](const testing::RankContext& context, wholememory_comm_t comm) {
        const int color = context.rank == 7 ? WHOLEMEMORY_SPLIT_NOCOLOR : context.rank % 3;
        wholememory_comm_t part = reinterpret_cast<wholememory_comm_t>(1);
        WM_ASSERT_OK(wholememory_split_communicator(&part, comm, color, -context.rank));
        if (color == WHOLEMEMORY_SPLIT_NOCOLOR) {
          EXPECT_EQ(nullptr, part);
          return;
        }
        std::vector<int> members;
        for (int r = 6; r >= 0; --r) {
          if (r % 3 == color) members.push_back(r);
        }
        int rank = -1, size = -1, local_size = -1;
        WM_ASSERT_OK(wholememory_communicator_get_rank(&rank, part));
        WM_ASSERT_OK(wholememory_communicator_get_size(&size, part));
        WM_ASSERT_OK(wholememory_communicator_get_local_size(&local_size, part));
        EXPECT_EQ(static_cast<int>(members.size()), size);
        EXPECT_EQ(context.rank, members.at(rank));
        int same_node = 0;
        for (int r : members) same_node += (r / 4 == context.node_index) ? 1 : 0;
        EXPECT_EQ(same_node, local_size);
        WM_EXPECT_OK(wholememory_communicator_barrier(part));
        WM_EXPECT_OK(wholememory_destroy_communicator(part));
      });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(WholeMemoryCommunicator, EmbeddedStoreHostsTheRendezvous) {
  // No external store: rank 0's wholememory_create_unique_id starts one in-process.
  auto options = ranks_on_nodes(3, 1);
  options.start_store = false;
  auto results = run_with_comm(options, [](const testing::RankContext&, wholememory_comm_t comm) {
    int size = 0;
    WM_ASSERT_OK(wholememory_communicator_get_size(&size, comm));
    EXPECT_EQ(3, size);
    WM_EXPECT_OK(wholememory_communicator_barrier(comm));
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(WholeMemoryCommunicator, UniqueIdEncodesStoreAndToken) {
  auto id = wholememory::UniqueId::generate("tcp://127.0.0.1:4242");
  auto decoded = wholememory::decode_unique_id(wholememory::encode_unique_id(id));
  EXPECT_EQ(id.store_url, decoded.store_url);
  EXPECT_EQ(id.token, decoded.token);
  EXPECT_NE(id.token, wholememory::UniqueId::generate("tcp://127.0.0.1:4242").token);
  EXPECT_THROW(
      wholememory::encode_unique_id(wholememory::UniqueId::generate(std::string(200, 'x'))),
      memloom::Error);

  auto encoded = wholememory::encode_unique_id(id);
  encoded.internal[30] ^= 1;  // one flipped bit of the URL
  EXPECT_THROW(wholememory::decode_unique_id(encoded), memloom::Error);
  wholememory_unique_id_t zeros{};
  EXPECT_THROW(wholememory::decode_unique_id(zeros), memloom::Error);
}

TEST(WholeMemoryCommunicator, RefusesBadInput) {
  auto results = run_with_comm(ranks_on_nodes(2, 1), [](const testing::RankContext& context,
                                                        wholememory_comm_t comm) {
    const auto garbage = reinterpret_cast<wholememory_comm_t>(0xdead0);
    int value = 0;
    clique_info_t clique{};
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_communicator_get_rank(&value, garbage));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_communicator_get_rank(&value, nullptr));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_communicator_get_rank(nullptr, comm));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_communicator_get_size(nullptr, comm));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_communicator_get_local_size(nullptr, comm));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_communicator_get_clique_info(nullptr, comm));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_communicator_get_clique_info(&clique, garbage));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_communicator_barrier(garbage));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_destroy_communicator(garbage));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wm_c_support_type_location(comm, 9, WHOLEMEMORY_ML_HOST));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wm_c_support_type_location(comm, WHOLEMEMORY_MT_CHUNKED, -1));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wm_c_set_distributed_backend(comm, 3));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_communicator_set_distributed_backend(comm, WHOLEMEMORY_DB_NONE));
    EXPECT_FALSE(wholememory_is_intranode_communicator(garbage));
    EXPECT_EQ(WHOLEMEMORY_DB_NONE, wholememory_communicator_get_distributed_backend(garbage));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_create_unique_id(nullptr));

    wholememory_unique_id_t junk;
    std::memset(junk.internal, 0x5a, sizeof(junk.internal));
    wholememory_comm_t other = nullptr;
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_create_communicator(&other, junk, 0, 1));
    wholememory_unique_id_t fresh{};
    WM_ASSERT_OK(wholememory_create_unique_id(&fresh));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_create_communicator(&other, fresh, 1, 1));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_create_communicator(&other, fresh, 0, 0));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_create_communicator(nullptr, fresh, 0, 1));

    // Both ranks take part; a color below -1 is refused on the rank that passed it.
    wholememory_comm_t part = nullptr;
    EXPECT_EQ(context.rank == 0 ? WHOLEMEMORY_INVALID_INPUT : WHOLEMEMORY_SUCCESS,
              wholememory_split_communicator(&part, comm, context.rank == 0 ? -5 : 0, 0));
    if (part != nullptr) {
      WM_EXPECT_OK(wholememory_destroy_communicator(part));
    }

    // A live allocation keeps its communicator; destroying it fails on both ranks.
    wholememory_handle_t handle = nullptr;
    WM_ASSERT_OK(wholememory_malloc(&handle, 4096, comm, WHOLEMEMORY_MT_DISTRIBUTED,
                                    WHOLEMEMORY_ML_HOST, 8));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_destroy_communicator(comm));
    WM_EXPECT_OK(wholememory_free(handle));
    WM_EXPECT_OK(wholememory_destroy_communicator(comm));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_destroy_communicator(comm));

    WM_EXPECT_OK(wholememory_finalize());
    EXPECT_EQ(WHOLEMEMORY_LOGIC_ERROR, wholememory_create_unique_id(&fresh));
    EXPECT_EQ(WHOLEMEMORY_INVALID_VALUE, wholememory_init(3));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wm_c_init_with_log_level(17));
    WM_EXPECT_OK(wholememory_init(0, LEVEL_WARN));
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(WholeMemoryCommunicator, TwoProcessesClaimingOneRankFailInsteadOfHanging) {
  auto options = ranks_on_nodes(2, 1);
  options.env["MEMLOOM_TIMEOUT_S"] = "2";
  int id_pipe[2];
  ASSERT_EQ(0, ::pipe(id_pipe));
  auto results = testing::run_ranks(options, [&](const testing::RankContext& context) {
    WM_ASSERT_OK(wholememory_init(0, LEVEL_FATAL));
    wholememory_unique_id_t id{};
    if (context.rank == 0) {
      WM_ASSERT_OK(wholememory_create_unique_id(&id));
      ASSERT_EQ(static_cast<ssize_t>(sizeof(id)), ::write(id_pipe[1], &id, sizeof(id)));
    } else {
      ASSERT_EQ(static_cast<ssize_t>(sizeof(id)), ::read(id_pipe[0], &id, sizeof(id)));
    }
    // Both claim rank 0 of 2: one is refused at once, the other times out waiting for rank 1.
    wholememory_comm_t comm = nullptr;
    const auto code = wholememory_create_communicator(&comm, id, 0, 2);
    EXPECT_TRUE(code == WHOLEMEMORY_INVALID_INPUT || code == WHOLEMEMORY_COMMUNICATION_ERROR)
        << code;
    EXPECT_EQ(nullptr, comm);
    WM_EXPECT_OK(wholememory_finalize());
  });
  ::close(id_pipe[0]);
  ::close(id_pipe[1]);
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(WholeMemoryCommunicator, CallsBeforeInitFail) {
  wholememory_unique_id_t id{};
  EXPECT_EQ(WHOLEMEMORY_LOGIC_ERROR, wholememory_create_unique_id(&id));
  wholememory_comm_t comm = nullptr;
  EXPECT_EQ(WHOLEMEMORY_LOGIC_ERROR, wholememory_create_communicator(&comm, id, 0, 1));
  EXPECT_FALSE(wholememory_is_build_with_nvshmem());
  EXPECT_FALSE(wholememory_is_rmm_enabled());
  EXPECT_EQ(WHOLEMEMORY_NOT_SUPPORTED, wholememory_set_rmm_enabled(true));
  WM_EXPECT_OK(wholememory_set_rmm_enabled(false));
  WM_EXPECT_OK(wholememory_finalize());
}

// Sets environment variables for one test and restores them afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) {
      ::setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_, old_;
  bool had_ = false;
};

TEST(WholeMemoryCommunicator, ForkGetDeviceCountAsksAChild) {
  ScopedEnv backend("MEMLOOM_BACKEND", "emulated");
  ScopedEnv devices("MEMLOOM_EMU_DEVICES", "5");
  EXPECT_EQ(5, fork_get_device_count());
}

}  // namespace
}  // namespace memloom::wmtest
