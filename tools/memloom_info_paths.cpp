#include "tools/memloom_info_paths.h"

#include <fstream>

namespace memloom::tools {
namespace {

bool cuda(const PathFacts& f) {
  return f.backend == "cuda";
}

std::string pair_list(const PathFacts& f) {
  std::string out;
  for (const auto& [from, to] : f.pairs_without_peer_access)
    out += (out.empty() ? "" : ", ") + std::to_string(from) + "->" + std::to_string(to);
  return out;
}

// Memory a collective allocation (WholeMemory, SHM, BM) shares with the ranks of its node:
// core::exchange_segments (src/core/shared_segments.h) hands every same-node rank each segment's
// export (fd through the FdBroker) and each maps it.
PathEntry same_node_mapping(const PathFacts& f, bool device) {
  if (!cuda(f)) {
    // hw/emulated/memfd_segment.h: both kinds are memfd segments, mapped shared.
    return {PeerPlace::kSameNode, "memfd_mapping",
            "shared mapping of the peer's memfd segment (loads, stores, memcpy)"};
  }
  if (!device) {
    // hw/cuda/vmm_memory_domain.cpp: a host segment is a memfd mapped by every rank and
    // registered with cudaHostRegister (portable | mapped).
    return {PeerPlace::kSameNode, "cuda_host_registered_mapping",
            "shared memfd mapping, registered with CUDA (cudaHostRegister): GPUs reach it over "
            "PCIe, CPUs by loads and stores"};
  }
  // hw/cuda/vmm_memory_domain.cpp exports with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR; the
  // importer maps it and grants its peer GPUs access (hw/cuda/vmm_va_range.cpp map_device_segment),
  // falling back to the owning GPU alone where the grant is refused (no peer access).
  PathEntry entry{PeerPlace::kSameNode, "cuda_vmm_mapping",
                  "CUDA VMM export (POSIX fd) mapped by every rank of the node: GPU loads/stores "
                  "and copies over NVLink/PCIe peer access"};
  if (!f.pairs_without_peer_access.empty()) {
    entry.how += "; GPU pairs without peer access (" + pair_list(f) +
                 "): the mapping is granted to the owning GPU only, so kernels on the other GPU "
                 "cannot load or store it";
  }
  return entry;
}

PathEntry self_entry(const std::string& how) {
  return {PeerPlace::kSelf, "local", how};
}

// WholeMemory on one node: CONTINUOUS, CHUNKED and HIERARCHY map the node's partitions
// (contiguous_range.h, chunked_memory.h, hierarchy_memory.h); DISTRIBUTED maps only its own
// partition and reaches every peer's, same-node ones too, through the communicator's collectives
// (distributed_memory.h; ops/distributed_ops.cpp exchanges with alltoallv): NCCL on CUDA,
// shared-memory chunks inside a node on the emulated backend (hw/host/hierarchical_collectives.h).
PathEntry wholememory_same_node(const PathFacts& f, bool device) {
  PathEntry entry = same_node_mapping(f, device);
  entry.how = "CONTINUOUS/CHUNKED/HIERARCHY: " + entry.how + "; DISTRIBUTED: " +
              (cuda(f) ? "the communicator's NCCL collectives"
                       : "the communicator's collectives, shared-memory chunks inside a node");
  return entry;
}

// A BM object's transport to other nodes: BmCopyEngine::plan (src/smem/bm/bm_copy_engine.cpp)
// sends every copy with a rank that is not same_node (bm_object.cpp) to the object's
// hal::Transport, the UCX transport on both backends (Platform::create_transport).
PathEntry bm_other_node(const PathFacts& f, bool rdma_request) {
  if (cuda(f) && !f.ucx_cuda_memory) {
    // hw/cuda/cuda_platform.cpp CudaPlatform::create_transport: where UCX does not register
    // CUDA memory, the UCX transport stages device memory through host buffers, on its am path.
    return {PeerPlace::kOtherNode, "hal_ucx_staged",
            "UCX transport, device memory staged through pinned host buffers on its am data path "
            "(this UCX has no CUDA memory support)"};
  }
  if (f.ucx_rdma) {
    return {PeerPlace::kOtherNode, "hal_ucx_rdma",
            "UCX transport: RDMA (UCX offers rc, dc or ud here)"};
  }
  // bm_object.cpp warn_if_rdma_is_missing: an object that asks for RDMA still gets UCX, with a
  // warning; UCX then runs over its other transports.
  return {PeerPlace::kOtherNode, "hal_ucx",
          std::string("UCX transport over TCP (or what UCX_TLS names): UCX offers no rc, dc or ud "
                      "here") +
              (rdma_request ? " (smem_bm_create warns)" : "")};
}

// WholeMemory across nodes: DISTRIBUTED and HIERARCHY memory reach other nodes' partitions
// through the communicator's collectives (src/wholememory/distributed_memory.h,
// hierarchy_memory.h); CONTINUOUS and CHUNKED need one node (src/wholememory/communicator.cpp).
// The collectives: NCCL on CUDA (host collectives where ranks share a GPU:
// CudaPlatform::create_collectives), ZeroMQ between nodes on the emulated backend
// (hw/host/hierarchical_collectives.h). The UCX transport does not apply.
PathEntry wholememory_other_node(const PathFacts& f) {
  if (cuda(f)) {
    return {PeerPlace::kOtherNode, "collectives_nccl",
            "DISTRIBUTED/HIERARCHY: the communicator's NCCL collectives (ZeroMQ host collectives "
            "where ranks share a GPU); CONTINUOUS/CHUNKED need one node"};
  }
  return {PeerPlace::kOtherNode, "collectives_zmq",
          "DISTRIBUTED/HIERARCHY: the communicator's collectives, ZeroMQ between nodes; "
          "CONTINUOUS/CHUNKED need one node"};
}

// TRANS's same-node direct path (src/smem/trans/direct_path.h, trans_engine.cpp
// Engine::transfer): memory from smem_trans_malloc is a memfd mapped here (memcpy), any other
// registered memory is copied with process_vm_readv/writev, which needs ptrace access. Once the
// kernel refuses it for a peer (EPERM, or ENOSYS under seccomp: direct_path.cpp
// cross_memory_copy), every later copy with that peer goes over the instance's transport.
// Yama (Documentation/admin-guide/LSM/Yama.rst): 0 same user; 1 descendants only (ranks are
// siblings, so refused without CAP_SYS_PTRACE); 2 CAP_SYS_PTRACE only; 3 never.
PathEntry trans_direct_same_node(const PathFacts& f) {
  const std::string needs = " (dataOpType SDMA, in the default)";
  if (f.ptrace_scope <= 0) {
    return {PeerPlace::kSameNode, "cross_memory_attach",
            "direct path" + needs +
                ": memfd mapping for smem_trans_malloc memory, cross-memory attach "
                "(process_vm_readv/writev) for other registered memory; ptrace_scope " +
                (f.ptrace_scope < 0 ? std::string("absent (no Yama)") : "0") +
                " allows it between processes of one user (where a seccomp filter refuses it, "
                "the transport instead, as for a refused attach)"};
  }
  const std::string scope = "ptrace_scope " + std::to_string(f.ptrace_scope);
  const std::string rule = f.ptrace_scope == 1   ? " lets a process attach to its descendants only"
                           : f.ptrace_scope == 2 ? " allows attach with CAP_SYS_PTRACE only"
                                                 : " forbids attach";
  return {PeerPlace::kSameNode, "transport_after_attach_refused",
          "memfd mapping for smem_trans_malloc memory" + needs +
              "; other registered memory: " + scope + rule +
              ", so the first such copy is refused and from then on every copy with that peer "
              "goes over the instance's transport (UCX)"};
}

// TRANS's network path: Engine::transfer_by_transport (src/smem/trans/trans_engine.cpp) sends
// what no same-node path takes to the instance's hal::Transport, which Engine::create opens as
// a BM object does; it needs a network data op (HOST_TCP, in the default dataOpType). `place`:
// where the peer is; `note`: why it is used.
PathEntry trans_transport(const PathFacts& f, PeerPlace place, const std::string& note = "") {
  PathEntry entry = bm_other_node(f, false);
  entry.place = place;
  entry.how += note;
  return entry;
}

}  // namespace

const char* peer_place_key(PeerPlace place) {
  switch (place) {
    case PeerPlace::kSelf:
      return "self";
    case PeerPlace::kSameNode:
      return "same_node";
    case PeerPlace::kOtherNode:
      return "other_node";
  }
  return "?";
}

const char* peer_place_text(PeerPlace place) {
  switch (place) {
    case PeerPlace::kSelf:
      return "this process";
    case PeerPlace::kSameNode:
      return "same node";
    case PeerPlace::kOtherNode:
      return "other node";
  }
  return "?";
}

std::vector<PathRow> path_table(const PathFacts& f) {
  std::vector<PathRow> rows;
  const std::string local_copy = "its own mapping: loads, stores, stream copies";

  rows.push_back(
      {"wholememory_device",
       "WholeMemory device memory",
       {self_entry(local_copy), wholememory_same_node(f, true), wholememory_other_node(f)}});
  rows.push_back(
      {"wholememory_host",
       "WholeMemory host memory",
       {self_entry(local_copy), wholememory_same_node(f, false), wholememory_other_node(f)}});

  // src/smem/shm/shm_object.cpp: SHM maps the slots of same-node ranks only; SMEMS_DATA_OP_RDMA is
  // accepted but reaches nothing more.
  rows.push_back({"shm",
                  "SHM slots",
                  {self_entry(local_copy),
                   same_node_mapping(f, true),
                   {PeerPlace::kOtherNode, "none",
                    "SHM maps same-node slots only (SMEMS_DATA_OP_RDMA reaches nothing "
                    "more)"}}});

  // bm_object.cpp: a side is remote when its rank is not same_node; BmCopyEngine::plan copies
  // the others (mapped here) with a stream.
  const std::string bm_local = "stream copy in its own mapping";
  rows.push_back({"bm_device",
                  "BM device memory (HBM)",
                  {self_entry(bm_local), same_node_mapping(f, true), bm_other_node(f, false)}});
  rows.push_back({"bm_host",
                  "BM host memory (DRAM)",
                  {self_entry(bm_local), same_node_mapping(f, false), bm_other_node(f, false)}});
  rows.push_back({"bm_rdma",
                  "BM with RDMA data ops (HOST_RDMA/ROCE, DEVICE_RDMA)",
                  {self_entry(bm_local), same_node_mapping(f, true), bm_other_node(f, true)}});

  // TRANS host memory. With staging (CUDA, or MEMLOOM_TRANS_STAGING=1) the direct path serves
  // only where the local buffer is host memory (Engine::local_side_is_host); forced staging counts
  // every local buffer as device memory (Engine::is_device_memory), so same-node copies go through
  // the transport, SDMA's stand-in there.
  PathEntry trans_self = {PeerPlace::kSelf, "cross_memory_attach",
                          "direct path: memcpy (memfd) or process_vm_readv/writev on its own pid, "
                          "always permitted"};
  const std::string forced = " (MEMLOOM_TRANS_STAGING=1)";
  rows.push_back(
      {"trans_host",
       "TRANS registered host memory",
       {f.trans_staging_forced ? trans_transport(f, PeerPlace::kSelf, forced) : trans_self,
        f.trans_staging_forced ? trans_transport(f, PeerPlace::kSameNode, forced)
                               : trans_direct_same_node(f),
        trans_transport(f, PeerPlace::kOtherNode)}});

  // TRANS device memory. Emulated device memory is host memory a thread can touch
  // (staged_copies.cpp staging_required), so it goes as host memory does. Where it is not (CUDA)
  // or staging is forced, same-node peers use DevicePath (src/smem/trans/device_path.h): the
  // owner's export imported (none needed in this process), one stream copy; what it cannot do
  // goes over the transport (staged on CUDA's TCP transport).
  const bool staged = cuda(f) || f.trans_staging_forced;
  if (!staged) {
    rows.push_back(
        {"trans_device",
         "TRANS device memory",
         {trans_self, trans_direct_same_node(f), trans_transport(f, PeerPlace::kOtherNode)}});
  } else {
    rows.push_back(
        {"trans_device",
         "TRANS device memory",
         {{PeerPlace::kSelf, "device_stream_copy", "device path: one stream copy, no import"},
          {PeerPlace::kSameNode, "device_ipc_stream_copy",
           std::string("device path: the owner's export (export_device_range) imported, one ") +
               (cuda(f) ? "device-to-device stream copy over NVLink/PCIe" : "stream copy") +
               "; a region without an export or a refused import: the transport"},
          trans_transport(f, PeerPlace::kOtherNode)}});
  }
  return rows;
}

int read_ptrace_scope(const std::string& file) {
  std::ifstream in(file);
  int scope = -1;
  if (!(in >> scope)) return -1;
  return scope;
}

JobLayout job_layout(const base::LaunchInfo& l) {
  JobLayout layout;
  if (!l.found() || l.rank < 0 || l.world_size < 1) {
    layout.why = "no launcher variables: this process is a job of one rank";
    return layout;
  }
  int first = -1;
  int count = -1;
  if (l.local_world_size == l.world_size) {
    first = 0;
    count = l.world_size;
    layout.why = "every rank is on this node (local world size = world size)";
  } else if ((l.launcher == "memloom" || l.launcher == "torchrun") && l.local_rank >= 0 &&
             l.local_world_size > 0) {
    // memloom-run places contiguous blocks of ranks on each node (sim/rank_environment.cpp
    // node_of); torchrun numbers a node's ranks consecutively from its base rank.
    first = l.rank - l.local_rank;
    count = l.local_world_size;
    layout.why = l.launcher + " numbers the ranks of a node consecutively: ranks " +
                 std::to_string(first) + ".." + std::to_string(first + count - 1) +
                 " are on this node";
  } else {
    layout.why = "nodes of other ranks are not known without the store: " +
                 (l.launcher.empty() ? std::string("the launcher") : l.launcher) +
                 " may place ranks on nodes in any order (memloom compares each rank's "
                 "MEMLOOM_NODE, else hostname + boot id, through the store)";
    return layout;
  }
  layout.known = true;
  for (int r = 0; r < l.world_size; ++r) {
    if (r == l.rank) continue;
    layout.ranks.push_back(
        {r, r >= first && r < first + count ? PeerPlace::kSameNode : PeerPlace::kOtherNode});
  }
  return layout;
}

}  // namespace memloom::tools
