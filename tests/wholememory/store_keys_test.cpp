// What WholeMemory leaves in the config store: allocations made and freed for days must not grow
// it. A HIERARCHY allocation splits its communicator twice (a local and a cross communicator);
// their keys go when every rank has freed the allocation.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>

#include "src/store/client.h"
#include "src/wholememory/communicator.h"
#include "src/wholememory/runtime.h"
#include "tests/wholememory/wm_test_support.h"

namespace memloom::wmtest {
namespace {

TEST(WholeMemoryStoreKeys, FreedHierarchyAllocationsLeaveNoKeysOfTheirCommunicators) {
  auto results = run_with_comm(
      ranks_on_nodes(4, 2), [](const testing::RankContext& me, wholememory_comm_t comm) {
        auto communicator = wholememory::Runtime::instance().comm(comm);
        const std::string splits = communicator->group().prefix().prefix() + "split";
        for (int round = 0; round < 3; ++round) {
          wholememory_handle_t handle = nullptr;
          WM_ASSERT_OK(wholememory_malloc(&handle, 1 << 20, comm, WHOLEMEMORY_MT_HIERARCHY,
                                          WHOLEMEMORY_ML_HOST, 8));
          WM_ASSERT_OK(wholememory_free(handle));
        }
        WM_ASSERT_OK(wholememory_communicator_barrier(comm));
        // Removing what is left under the split prefixes counts it.
        if (me.rank == 0) {
          EXPECT_EQ(0u, communicator->group().store().remove_prefix(splits));
        }
        WM_ASSERT_OK(wholememory_communicator_barrier(comm));
      });
  EXPECT_ALL_RANKS_PASS(results);
}

// A communicator split by the user from an allocation's local communicator keeps working after
// the allocation is freed: the allocation's groups keep their keys while they have children.
TEST(WholeMemoryStoreKeys, ASplitOfAnAllocationsCommunicatorOutlivesTheAllocation) {
  auto results = run_with_comm(
      ranks_on_nodes(4, 2), [](const testing::RankContext& me, wholememory_comm_t comm) {
        wholememory_handle_t handle = nullptr;
        WM_ASSERT_OK(wholememory_malloc(&handle, 1 << 20, comm, WHOLEMEMORY_MT_HIERARCHY,
                                        WHOLEMEMORY_ML_HOST, 8));
        wholememory_comm_t local = nullptr;
        WM_ASSERT_OK(wholememory_get_local_communicator(&local, handle));
        wholememory_comm_t child = nullptr;
        WM_ASSERT_OK(wholememory_split_communicator(&child, local, 0, me.rank));
        WM_ASSERT_OK(wholememory_free(handle));
        WM_ASSERT_OK(wholememory_communicator_barrier(child));
        wholememory_handle_t on_child = nullptr;
        WM_ASSERT_OK(wholememory_malloc(&on_child, 1 << 20, child, WHOLEMEMORY_MT_CONTINUOUS,
                                        WHOLEMEMORY_ML_HOST, 8));
        WM_ASSERT_OK(wholememory_free(on_child));
        WM_ASSERT_OK(wholememory_destroy_communicator(child));
      });
  EXPECT_ALL_RANKS_PASS(results);
}

// Without a launcher's job id the unique id names the job on the store: other clients of the store
// (the shared namespace "") can neither see nor remove a communicator's keys, and one that names
// the communicator's namespace without its token is refused.
TEST(WholeMemoryStoreKeys, WithoutAJobIdTheUniqueIdKeepsOtherClientsOut) {
  testing::MultiProcessOptions options = ranks_on_nodes(2, 1);
  options.env["MEMLOOM_JOB_ID"] = "";  // as under a launcher that sets none
  options.env["MEMLOOM_JOB_SECRET"] = "";
  auto results =
      run_with_comm(options, [](const testing::RankContext& me, wholememory_comm_t comm) {
        auto communicator = wholememory::Runtime::instance().comm(comm);
        const std::string prefix = communicator->group().prefix().prefix();  // "wm/<token>/"
        const std::string token = prefix.substr(3, prefix.size() - 4);
        if (me.rank == 0) {
          const std::string probe = prefix + "probe";
          communicator->group().store().set(probe, "the job's");
          store::ClientOptions outsider;
          outsider.job_namespace = "";
          outsider.job_secret = "";
          auto shared = store::Client::connect(me.store_url, outsider);
          EXPECT_EQ(shared->get(probe, std::chrono::milliseconds(0)), std::nullopt);
          shared->remove_prefix("");  // another job's clean-up must not reach this communicator
          EXPECT_EQ(communicator->group().store().get(probe, std::chrono::milliseconds(0)),
                    std::optional<std::string>("the job's"));
          store::ClientOptions impostor;
          impostor.job_namespace = "wholememory." + token;
          impostor.job_secret = "";
          try {
            auto joined = store::Client::connect(me.store_url, impostor);
            EXPECT_EQ(joined->get(probe, std::chrono::milliseconds(0)), std::nullopt)
                << "a client without the unique id's token read its namespace";
          } catch (const Error& refused) {
            EXPECT_EQ(refused.status(), Status::kInvalidValue) << refused.what();
          }
        }
        WM_ASSERT_OK(wholememory_communicator_barrier(comm));
        wholememory_handle_t handle = nullptr;
        WM_ASSERT_OK(wholememory_malloc(&handle, 1 << 20, comm, WHOLEMEMORY_MT_CONTINUOUS,
                                        WHOLEMEMORY_ML_HOST, 8));
        WM_ASSERT_OK(wholememory_free(handle));
      });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::wmtest
