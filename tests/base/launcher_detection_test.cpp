// The launcher rule (src/base/launcher_detection.h): which variables win, what they give, where
// the store is, and what a bad value says.
#include "src/base/launcher_detection.h"

#include <gtest/gtest.h>

#include <string>

#include "memloom/error.h"
#include "tests/support/scoped_env.h"

namespace memloom::base {
namespace {

using test::EnvValues;
using test::ScopedEnv;

// Every variable the rule reads, unset: each test then sets only its launcher's.
EnvValues clean(EnvValues set) {
  EnvValues all;
  for (const char* name : {"MEMLOOM_RANK",
                           "MEMLOOM_WORLD_SIZE",
                           "MEMLOOM_LOCAL_RANK",
                           "MEMLOOM_LOCAL_SIZE",
                           "MEMLOOM_STORE_URL",
                           "MEMLOOM_STORE_PORT",
                           "MEMLOOM_JOB_ID",
                           "RANK",
                           "WORLD_SIZE",
                           "LOCAL_RANK",
                           "LOCAL_WORLD_SIZE",
                           "MASTER_ADDR",
                           "MASTER_PORT",
                           "TORCHELASTIC_RUN_ID",
                           "OMPI_COMM_WORLD_RANK",
                           "OMPI_COMM_WORLD_SIZE",
                           "OMPI_COMM_WORLD_LOCAL_RANK",
                           "OMPI_COMM_WORLD_LOCAL_SIZE",
                           "OMPI_MCA_ess_base_jobid",
                           "PMIX_NAMESPACE",
                           "SLURM_PROCID",
                           "SLURM_NTASKS",
                           "SLURM_LOCALID",
                           "SLURM_NODEID",
                           "SLURM_TASKS_PER_NODE",
                           "SLURM_JOB_ID",
                           "SLURM_STEP_ID",
                           "SLURM_STEP_NODELIST",
                           "SLURM_JOB_NODELIST"}) {
    all[name] = std::nullopt;
  }
  for (const auto& [name, value] : set) all[name] = value;
  return all;
}

TEST(LauncherDetection, NoneFound) {
  ScopedEnv env(clean({}));
  const LaunchInfo info = detect_launch();
  EXPECT_FALSE(info.found());
  EXPECT_EQ(info.rank, -1);
  EXPECT_TRUE(info.store_url.empty());
  EXPECT_NE(info.describe().find("no launcher found"), std::string::npos);
}

TEST(LauncherDetection, MemloomVariablesWinOverTorchrun) {
  ScopedEnv env(clean({{"MEMLOOM_RANK", "3"},
                       {"MEMLOOM_WORLD_SIZE", "8"},
                       {"MEMLOOM_LOCAL_RANK", "1"},
                       {"MEMLOOM_LOCAL_SIZE", "2"},
                       {"MEMLOOM_STORE_URL", "tcp://127.0.0.1:4000"},
                       {"RANK", "0"},
                       {"WORLD_SIZE", "2"},
                       {"MASTER_ADDR", "127.0.0.1"},
                       {"MASTER_PORT", "29500"}}));
  const LaunchInfo info = detect_launch();
  EXPECT_EQ(info.launcher, "memloom");
  EXPECT_EQ(info.rank_variable, "MEMLOOM_RANK");
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.world_size, 8);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.local_world_size, 2);
  EXPECT_EQ(info.store_url, "tcp://127.0.0.1:4000");
  EXPECT_FALSE(info.rank0_serves_store);
}

TEST(LauncherDetection, TorchrunGivesRanksAndAStoreBesideTorchs) {
  ScopedEnv env(clean({{"RANK", "2"},
                       {"WORLD_SIZE", "4"},
                       {"LOCAL_RANK", "0"},
                       {"LOCAL_WORLD_SIZE", "2"},
                       {"MASTER_ADDR", "node17"},
                       {"MASTER_PORT", "29500"},
                       {"OMPI_COMM_WORLD_RANK", "1"},
                       {"OMPI_COMM_WORLD_SIZE", "2"}}));
  const LaunchInfo info = detect_launch();
  EXPECT_EQ(info.launcher, "torchrun");
  EXPECT_EQ(info.rank_variable, "RANK");
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.world_size, 4);
  EXPECT_EQ(info.local_rank, 0);
  EXPECT_EQ(info.local_world_size, 2);
  EXPECT_EQ(info.store_url, "tcp://node17:29501");  // MASTER_PORT itself is torch's TCPStore
  EXPECT_EQ(info.store_source, "MASTER_ADDR, MASTER_PORT + 1");
  EXPECT_TRUE(info.rank0_serves_store);
  EXPECT_EQ(info.describe(),
            "rank 2 of 4 (local 0 of 2) from torchrun (RANK); store tcp://node17:29501 "
            "(MASTER_ADDR, MASTER_PORT + 1), served by rank 0");
}

TEST(LauncherDetection, StorePortOverridesAndIpv6MasterAddressIsBracketed) {
  ScopedEnv env(clean({{"RANK", "0"},
                       {"WORLD_SIZE", "2"},
                       {"MASTER_ADDR", "::1"},
                       {"MASTER_PORT", "29500"},
                       {"MEMLOOM_STORE_PORT", "31000"}}));
  const LaunchInfo info = detect_launch();
  EXPECT_EQ(info.store_url, "tcp://[::1]:31000");
  EXPECT_EQ(info.store_source, "MASTER_ADDR, MEMLOOM_STORE_PORT");
}

TEST(LauncherDetection, OpenMpiOnOneHostServesOnLoopbackAtAPortOfTheJob) {
  EnvValues ompi = {{"OMPI_COMM_WORLD_RANK", "1"},
                    {"OMPI_COMM_WORLD_SIZE", "4"},
                    {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                    {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
                    {"OMPI_MCA_ess_base_jobid", "856031233"}};
  std::string first_url;
  {
    ScopedEnv env(clean(ompi));
    const LaunchInfo info = detect_launch();
    EXPECT_EQ(info.launcher, "Open MPI");
    EXPECT_EQ(info.rank_variable, "OMPI_COMM_WORLD_RANK");
    EXPECT_EQ(info.rank, 1);
    EXPECT_EQ(info.local_world_size, 4);
    EXPECT_EQ(info.store_url.rfind("tcp://127.0.0.1:", 0), 0u) << info.store_url;
    EXPECT_TRUE(info.rank0_serves_store);
    first_url = info.store_url;
  }
  ompi["OMPI_COMM_WORLD_RANK"] = "3";  // another rank of the job: the same store
  {
    ScopedEnv env(clean(ompi));
    EXPECT_EQ(detect_launch().store_url, first_url);
  }
  ompi["OMPI_COMM_WORLD_LOCAL_SIZE"] = "2";  // across hosts: nothing to agree on without help
  {
    ScopedEnv env(clean(ompi));
    EXPECT_TRUE(detect_launch().store_url.empty());
  }
}

TEST(LauncherDetection, SlurmUsesTheFirstHostOfTheJob) {
  ScopedEnv env(clean({{"SLURM_PROCID", "5"},
                       {"SLURM_NTASKS", "7"},
                       {"SLURM_LOCALID", "1"},
                       {"SLURM_NODEID", "2"},
                       {"SLURM_TASKS_PER_NODE", "2(x3),1"},
                       {"SLURM_JOB_ID", "4242"},
                       {"SLURM_STEP_ID", "0"},
                       {"SLURM_STEP_NODELIST", "gpu[07-09,12]"}}));
  const LaunchInfo info = detect_launch();
  EXPECT_EQ(info.launcher, "Slurm");
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.world_size, 7);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.local_world_size, 2);
  EXPECT_EQ(info.store_url.rfind("tcp://gpu07:", 0), 0u) << info.store_url;
  EXPECT_TRUE(info.rank0_serves_store);
}

TEST(LauncherDetection, SlurmHostListsAndTaskCounts) {
  EXPECT_EQ(first_slurm_host("node17"), "node17");
  EXPECT_EQ(first_slurm_host("a1,b2"), "a1");
  EXPECT_EQ(first_slurm_host("node[07-09,12],gpu1"), "node07");
  EXPECT_EQ(first_slurm_host("x,node[3-4]"), "x");
  EXPECT_EQ(first_slurm_host("rack2-n[5,9]"), "rack2-n5");
  EXPECT_EQ(slurm_tasks_on_node("4", 0), 4);
  EXPECT_EQ(slurm_tasks_on_node("2(x3),1", 2), 2);
  EXPECT_EQ(slurm_tasks_on_node("2(x3),1", 3), 1);
  EXPECT_EQ(slurm_tasks_on_node("2(x3),1", 4), -1);
  EXPECT_EQ(slurm_tasks_on_node("garbage", 0), -1);
}

TEST(LauncherDetection, BadValuesNameTheVariable) {
  auto message = [](const EnvValues& values) {
    ScopedEnv env(clean(values));
    try {
      detect_launch();
    } catch (const Error& error) {
      EXPECT_EQ(error.status(), Status::kInvalidValue);
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({{"RANK", "two"}, {"WORLD_SIZE", "4"}}).find("RANK='two'"), std::string::npos);
  EXPECT_NE(message({{"RANK", "4"}, {"WORLD_SIZE", "4"}}).find("0..3"), std::string::npos);
  EXPECT_NE(message({{"RANK", "1"}}).find("WORLD_SIZE is not"), std::string::npos);
  EXPECT_NE(message({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "0"}})
                .find("OMPI_COMM_WORLD_SIZE='0'"),
            std::string::npos);
}

}  // namespace
}  // namespace memloom::base
