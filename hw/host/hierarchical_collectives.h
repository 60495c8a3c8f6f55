// The emulated backend's Collectives: shared memory inside a node (ShmGroup), ZeroMQ between
// nodes (ZmqPeerMesh), composed hierarchically.
//
// Every call starts with an agreement: each rank writes a header (which collective, its sequence
// number, sizes, root, counts) into its slot; after a node barrier the node's members see each
// other's headers, node leaders exchange their nodes' headers, and every leader evaluates the same
// check over all headers and hands the verdict to its node after a second barrier. A barrier is
// exactly this agreement. Disagreeing arguments fail every rank with kInvalidInput and leave the
// group usable; any other failure (timeout, dead peer, abort()) poisons the group: the abort flag
// in the node's region plus a notice to every other rank makes all current and later calls fail
// with kCommunication and the first failure's reason.
//
// Data then moves: inside a node through the region's chunks, between nodes leader to leader
// (broadcast, allgather(v): the node's pieces go once to each other leader, which spreads them
// in its node) or rank to rank (alltoallv).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hw/hal/bootstrap.h"
#include "hw/hal/collectives.h"
#include "hw/host/buffer_staging.h"
#include "hw/host/collective_header.h"
#include "hw/host/shm_group.h"
#include "hw/host/zmq_peer_mesh.h"

namespace memloom::host {

// Data per member and round in the node region; MEMLOOM_EMU_COLL_CHUNK (K/M suffixes) overrides.
inline constexpr size_t kDefaultCollectiveChunkBytes = 256 << 10;

class HierarchicalCollectives : public hal::Collectives {
 public:
  // Collective over the group: returns once every member has joined, or throws at the deadline.
  // `staging` (may be null) moves buffers the CPU cannot touch through host memory.
  HierarchicalCollectives(const hal::GroupSpec& group, hal::Bootstrap& bootstrap, Deadline deadline,
                          std::unique_ptr<BufferStaging> staging = nullptr);
  ~HierarchicalCollectives() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void run(const hal::CollectiveCall& call, Deadline deadline) override;
  void abort(const std::string& reason) override;

 private:
  // The agreement, then the data phase of `call`, whose buffers are all host memory.
  void run_on_host(const hal::CollectiveCall& call, Deadline deadline);
  void spread_from_root(const hal::CollectiveCall& call, Deadline deadline);
  void gather_pieces(const hal::CollectiveCall& call, const CollectiveHeader& header,
                     Deadline deadline);
  void exchange_pairwise(const hal::CollectiveCall& call, Deadline deadline);
  template <typename Body>
  void guarded(CollectiveOp op, Body&& body);
  void agree(CollectiveHeader header, Deadline deadline);
  void exchange_headers_between_leaders(const CollectiveHeader& mine, Deadline deadline,
                                        ShmVerdict* verdict);
  void gather_data(const std::byte* send, std::byte* recv, const std::vector<size_t>& counts,
                   const size_t* displs, Deadline deadline);
  bool can_stage(const CollectiveHeader& header, size_t largest) const;
  void collect_staged(const std::byte* send, std::byte* recv, const std::vector<size_t>& counts,
                      const size_t* displs);
  void poison(const std::string& reason);
  ZmqPeerMesh::HealthCheck health(Deadline deadline);

  bool is_leader() const { return node_ranks_[my_node_].front() == rank_; }
  int leader_of(int node) const { return node_ranks_[node].front(); }

  int rank_;
  int size_;
  std::vector<int> node_of_;                  // node index of each rank
  std::vector<int> local_index_of_;           // position of each rank within its node
  std::vector<std::vector<int>> node_ranks_;  // ranks of each node, ascending
  int my_node_ = 0;

  std::unique_ptr<BufferStaging> staging_;
  std::unique_ptr<ShmGroup> shm_;
  std::unique_ptr<ZmqPeerMesh> mesh_;  // only when the group spans several nodes
  uint64_t next_seq_ = 0;
  uint64_t seq_ = 0;                             // the current call's sequence number
  std::vector<CollectiveHeader> local_headers_;  // the node's headers of the current call
};

}  // namespace memloom::host
