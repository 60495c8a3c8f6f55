// memloom-info's "paths" section: which path moves the bytes between this process and each kind
// of peer (this process, another rank on this node, a rank on another node), for each API and
// memory kind, on this backend with this configuration. The rules are a pure function of the
// facts (PathFacts), so tests inject facts a machine cannot be put into (ptrace_scope 2, GPUs
// without peer access); memloom_info_main.cpp gathers the facts of this machine.
//
// The rules restate the library's choices; each is cited (file and function) in the .cpp, so a
// change there has one place to follow here.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "src/base/launcher_detection.h"

namespace memloom::tools {

struct PathFacts {
  std::string backend;           // "cuda" or "emulated" (Platform::name())
  bool ucx_rdma = false;         // UCX offers rc, dc or ud here
  bool ucx_cuda_memory = false;  // UCX registers CUDA memory itself
  // /proc/sys/kernel/yama/ptrace_scope; -1 when the file is absent (no Yama: same-user attach).
  int ptrace_scope = -1;
  bool trans_staging_forced = false;  // MEMLOOM_TRANS_STAGING=1
  int gpus = 0;                       // CUDA devices of this process (0 on the emulated backend)
  // CUDA device pairs (from, to) the driver reports without peer access.
  std::vector<std::pair<int, int>> pairs_without_peer_access;
};

// Where a peer is, seen from this process.
enum class PeerPlace { kSelf, kSameNode, kOtherNode };
const char* peer_place_key(PeerPlace place);   // "self", "same_node", "other_node"
const char* peer_place_text(PeerPlace place);  // "this process", ...

struct PathEntry {
  PeerPlace place;
  std::string path;  // short key for scripts: "memfd_mapping", "hal_ucx", "cross_memory_attach"...
  std::string how;   // one line for people: the path, and its fall-back where there is one
};

struct PathRow {
  std::string memory;              // key: "wholememory_device", "trans_host", ...
  std::string title;               // "WholeMemory device memory", ...
  std::vector<PathEntry> entries;  // self, same node, other node
};

std::vector<PathRow> path_table(const PathFacts& facts);

// The Yama ptrace scope read from `file`; -1 when it cannot be read (no Yama module).
int read_ptrace_scope(const std::string& file = "/proc/sys/kernel/yama/ptrace_scope");

// For item 2 of the section: the other ranks of the job as the launcher's variables place them.
struct RankPlace {
  int rank;
  PeerPlace place;
};
struct JobLayout {
  bool known = false;            // places could be given without contacting other ranks
  std::string why;               // how they were derived, or why they are not known
  std::vector<RankPlace> ranks;  // every rank but this one (empty unless known)
};
JobLayout job_layout(const base::LaunchInfo& launch);

}  // namespace memloom::tools
