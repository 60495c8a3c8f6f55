// The rules of memloom-info's "paths" section, with facts no test machine can be put into
// (ptrace_scope 1-3, GPUs without peer access, UCX with RDMA or CUDA memory support).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "tools/memloom_info_paths.h"

namespace memloom::tools {
namespace {

PathFacts emulated_tcp() {  // UCX without RDMA: it runs over TCP
  PathFacts facts;
  facts.backend = "emulated";
  facts.ptrace_scope = 0;
  return facts;
}

PathFacts cuda_tcp() {
  PathFacts facts = emulated_tcp();
  facts.backend = "cuda";
  facts.gpus = 2;
  return facts;
}

const PathEntry& entry(const PathFacts& facts, const std::string& memory, PeerPlace place) {
  static std::vector<PathRow> rows;
  rows = path_table(facts);
  for (const PathRow& row : rows) {
    if (row.memory != memory) continue;
    for (const PathEntry& e : row.entries)
      if (e.place == place) return e;
  }
  ADD_FAILURE() << "no entry for " << memory << " / " << peer_place_key(place);
  static const PathEntry missing{place, "missing", ""};
  return missing;
}

TEST(ToolsPaths, EveryRowHasOneEntryPerKindOfPeer) {
  const auto rows = path_table(emulated_tcp());
  ASSERT_EQ(rows.size(), 8u);
  for (const PathRow& row : rows) {
    ASSERT_EQ(row.entries.size(), 3u) << row.memory;
    EXPECT_EQ(row.entries[0].place, PeerPlace::kSelf);
    EXPECT_EQ(row.entries[1].place, PeerPlace::kSameNode);
    EXPECT_EQ(row.entries[2].place, PeerPlace::kOtherNode);
    for (const PathEntry& e : row.entries) EXPECT_FALSE(e.how.empty()) << row.memory;
  }
}

TEST(ToolsPaths, SameNodeCollectiveMemoryIsMappedPerBackend) {
  EXPECT_EQ(entry(emulated_tcp(), "bm_device", PeerPlace::kSameNode).path, "memfd_mapping");
  EXPECT_EQ(entry(cuda_tcp(), "bm_device", PeerPlace::kSameNode).path, "cuda_vmm_mapping");
  EXPECT_EQ(entry(cuda_tcp(), "wholememory_host", PeerPlace::kSameNode).path,
            "cuda_host_registered_mapping");
  EXPECT_EQ(entry(cuda_tcp(), "shm", PeerPlace::kOtherNode).path, "none");
  // DISTRIBUTED maps only its own partition, also on one node.
  const PathEntry& wm = entry(cuda_tcp(), "wholememory_device", PeerPlace::kSameNode);
  EXPECT_NE(wm.how.find("DISTRIBUTED: the communicator's NCCL collectives"), std::string::npos)
      << wm.how;
}

TEST(ToolsPaths, UcxRdmaChangesTheBmCrossNodePath) {
  PathFacts facts = emulated_tcp();
  EXPECT_EQ(entry(facts, "bm_device", PeerPlace::kOtherNode).path, "hal_ucx");
  EXPECT_EQ(entry(facts, "bm_host", PeerPlace::kOtherNode).path, "hal_ucx");
  facts.ucx_rdma = true;
  EXPECT_EQ(entry(facts, "bm_device", PeerPlace::kOtherNode).path, "hal_ucx_rdma");
  // TRANS goes through the same transport (issue #22); WholeMemory does not follow it.
  EXPECT_EQ(entry(facts, "trans_host", PeerPlace::kOtherNode).path, "hal_ucx_rdma");
  EXPECT_EQ(entry(facts, "wholememory_device", PeerPlace::kOtherNode).path, "collectives_zmq");
}

TEST(ToolsPaths, RdmaDataOpsWithoutRdmaAreWarnedOf) {
  PathFacts facts = emulated_tcp();
  const PathEntry& e = entry(facts, "bm_rdma", PeerPlace::kOtherNode);
  EXPECT_EQ(e.path, "hal_ucx");
  EXPECT_NE(e.how.find("smem_bm_create warns"), std::string::npos) << e.how;
  EXPECT_EQ(entry(facts, "bm_host", PeerPlace::kOtherNode).how.find("warns"), std::string::npos);
  facts.ucx_rdma = true;
  EXPECT_EQ(entry(facts, "bm_rdma", PeerPlace::kOtherNode).path, "hal_ucx_rdma");
  EXPECT_EQ(entry(facts, "bm_rdma", PeerPlace::kSameNode).path, "memfd_mapping");
}

TEST(ToolsPaths, CudaWithoutUcxCudaMemoryStagesDeviceMemoryOnUcx) {
  PathFacts facts = cuda_tcp();
  facts.ucx_rdma = true;
  const PathEntry& e = entry(facts, "bm_device", PeerPlace::kOtherNode);
  EXPECT_EQ(e.path, "hal_ucx_staged");
  EXPECT_NE(e.how.find("no CUDA memory support"), std::string::npos) << e.how;
  EXPECT_EQ(entry(facts, "bm_rdma", PeerPlace::kOtherNode).path, "hal_ucx_staged");
  facts.ucx_cuda_memory = true;
  EXPECT_EQ(entry(facts, "bm_device", PeerPlace::kOtherNode).path, "hal_ucx_rdma");
  EXPECT_EQ(entry(facts, "wholememory_device", PeerPlace::kOtherNode).path, "collectives_nccl");
}

TEST(ToolsPaths, PtraceScopeDecidesCrossMemoryAttach) {
  PathFacts facts = emulated_tcp();
  for (int scope : {-1, 0}) {
    facts.ptrace_scope = scope;
    EXPECT_EQ(entry(facts, "trans_host", PeerPlace::kSameNode).path, "cross_memory_attach");
  }
  for (int scope : {1, 2, 3}) {
    facts.ptrace_scope = scope;
    const PathEntry& e = entry(facts, "trans_host", PeerPlace::kSameNode);
    EXPECT_EQ(e.path, "transport_after_attach_refused") << scope;
    EXPECT_NE(e.how.find("ptrace_scope " + std::to_string(scope)), std::string::npos) << e.how;
    // Emulated device memory is host memory: it goes the same way.
    EXPECT_EQ(entry(facts, "trans_device", PeerPlace::kSameNode).path,
              "transport_after_attach_refused");
    // A process may always attach to itself.
    EXPECT_EQ(entry(facts, "trans_host", PeerPlace::kSelf).path, "cross_memory_attach");
  }
}

TEST(ToolsPaths, GpusWithoutPeerAccessAreNamed) {
  PathFacts facts = cuda_tcp();
  EXPECT_EQ(entry(facts, "bm_device", PeerPlace::kSameNode).how.find("without peer access"),
            std::string::npos);
  facts.pairs_without_peer_access = {{0, 1}, {1, 0}};
  const PathEntry& e = entry(facts, "bm_device", PeerPlace::kSameNode);
  EXPECT_NE(e.how.find("without peer access (0->1, 1->0)"), std::string::npos) << e.how;
}

TEST(ToolsPaths, TransDeviceMemoryOnCudaTakesTheDevicePath) {
  PathFacts facts = cuda_tcp();
  EXPECT_EQ(entry(facts, "trans_device", PeerPlace::kSameNode).path, "device_ipc_stream_copy");
  const PathEntry& other = entry(facts, "trans_device", PeerPlace::kOtherNode);
  EXPECT_EQ(other.path, "hal_ucx_staged");
  EXPECT_NE(other.how.find("staged"), std::string::npos) << other.how;
  // Host memory still goes by cross-memory attach on CUDA.
  EXPECT_EQ(entry(facts, "trans_host", PeerPlace::kSameNode).path, "cross_memory_attach");
}

TEST(ToolsPaths, ForcedStagingSendsSameNodeTransCopiesToTheTransport) {
  PathFacts facts = emulated_tcp();
  facts.trans_staging_forced = true;
  EXPECT_EQ(entry(facts, "trans_host", PeerPlace::kSameNode).path, "hal_ucx");
  EXPECT_EQ(entry(facts, "trans_device", PeerPlace::kSameNode).path, "device_ipc_stream_copy");
}

TEST(ToolsPaths, ReadsThePtraceScopeFile) {
  char name[] = "/tmp/memloom-ptrace-scope-XXXXXX";
  const int fd = ::mkstemp(name);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "2\n", 2), 2);
  ::close(fd);
  EXPECT_EQ(read_ptrace_scope(name), 2);
  ::unlink(name);
  EXPECT_EQ(read_ptrace_scope(name), -1);
}

base::LaunchInfo launch(const std::string& launcher, int rank, int world, int local, int local_ws) {
  base::LaunchInfo info;
  info.launcher = launcher;
  info.rank = rank;
  info.world_size = world;
  info.local_rank = local;
  info.local_world_size = local_ws;
  return info;
}

TEST(ToolsPaths, LayoutFromTorchrunBlocks) {
  const JobLayout layout = job_layout(launch("torchrun", 5, 8, 1, 4));
  ASSERT_TRUE(layout.known) << layout.why;
  ASSERT_EQ(layout.ranks.size(), 7u);
  for (const RankPlace& r : layout.ranks) {
    const bool same = r.rank >= 4 && r.rank < 8;
    EXPECT_EQ(r.place, same ? PeerPlace::kSameNode : PeerPlace::kOtherNode) << r.rank;
  }
}

TEST(ToolsPaths, LayoutOfOneNode) {
  const JobLayout layout = job_layout(launch("Open MPI", 0, 3, 0, 3));
  ASSERT_TRUE(layout.known);
  ASSERT_EQ(layout.ranks.size(), 2u);
  for (const RankPlace& r : layout.ranks) EXPECT_EQ(r.place, PeerPlace::kSameNode);
}

TEST(ToolsPaths, LayoutUnknownWhereTheLauncherMayInterleave) {
  for (const char* launcher : {"Open MPI", "Slurm"}) {
    const JobLayout layout = job_layout(launch(launcher, 1, 4, 0, 2));
    EXPECT_FALSE(layout.known);
    EXPECT_TRUE(layout.ranks.empty());
    EXPECT_NE(layout.why.find("not known without the store"), std::string::npos) << layout.why;
  }
  EXPECT_FALSE(job_layout(base::LaunchInfo{}).known);
}

}  // namespace
}  // namespace memloom::tools
