#include "hw/host/hierarchical_collectives.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

#include "hw/host/shm_collectives.h"
#include "hw/host/staged_call.h"
#include "memloom/error.h"
#include "src/base/environment.h"

namespace memloom::host {
namespace {

// base + displacement, without forming an offset from a null buffer that carries nothing.
template <typename T>
T* piece(T* base, size_t displacement, size_t count) {
  return count == 0 ? nullptr : base + displacement;
}

size_t chunk_bytes_from_environment() {
  const char* value = std::getenv("MEMLOOM_EMU_COLL_CHUNK");
  if (value == nullptr || *value == '\0') return kDefaultCollectiveChunkBytes;
  return base::parse_byte_size(value);
}

void validate(const hal::GroupSpec& group) {
  MEMLOOM_CHECK_ARG(group.size >= 1, "a collective group needs at least one rank");
  MEMLOOM_CHECK_ARG(group.rank >= 0 && group.rank < group.size,
                    "group rank " + std::to_string(group.rank) + " outside [0, " +
                        std::to_string(group.size) + ")");
  MEMLOOM_CHECK_ARG(group.node_of_rank.size() == static_cast<size_t>(group.size),
                    "node_of_rank must name the node of every rank");
  MEMLOOM_CHECK_ARG(group.pid_of_rank.size() == static_cast<size_t>(group.size),
                    "pid_of_rank must give the pid of every rank");
}

}  // namespace

HierarchicalCollectives::HierarchicalCollectives(const hal::GroupSpec& group,
                                                 hal::Bootstrap& bootstrap, Deadline deadline,
                                                 std::unique_ptr<BufferStaging> staging)
    : rank_(group.rank), size_(group.size), staging_(std::move(staging)) {
  validate(group);
  // Nodes are numbered by their lowest rank, which every member computes alike.
  std::map<std::string, int> node_index;
  node_of_.resize(size_);
  local_index_of_.resize(size_);
  for (int r = 0; r < size_; ++r) {
    auto [it, added] =
        node_index.emplace(group.node_of_rank[r], static_cast<int>(node_ranks_.size()));
    if (added) node_ranks_.emplace_back();
    node_of_[r] = it->second;
    local_index_of_[r] = static_cast<int>(node_ranks_[it->second].size());
    node_ranks_[it->second].push_back(r);
  }
  my_node_ = node_of_[rank_];

  ShmGroupOptions options;
  for (int r : node_ranks_[my_node_]) options.members.push_back({r, group.pid_of_rank[r]});
  options.local_index = local_index_of_[rank_];
  options.header_bytes = CollectiveHeader::encoded_bytes(size_);
  options.chunk_bytes = chunk_bytes_from_environment();
  options.key = "coll/shm/" + std::to_string(leader_of(my_node_));
  shm_ = std::make_unique<ShmGroup>(options, bootstrap, deadline);

  // The region's fd stays published only until every member of the node has mapped it, which
  // the creation agreement below guarantees; a failed creation withdraws it too.
  struct Withdraw {
    ShmGroup& shm;
    hal::Bootstrap& bootstrap;
    ~Withdraw() { shm.withdraw_fd(bootstrap); }
  } withdraw{*shm_, bootstrap};

  if (node_ranks_.size() > 1) {
    std::vector<int> remote;
    for (int r = 0; r < size_; ++r) {
      if (node_of_[r] != my_node_) remote.push_back(r);
    }
    mesh_ = std::make_unique<ZmqPeerMesh>(
        rank_, remote, bootstrap, "coll/mesh/", deadline,
        [this](int, const std::string& reason) { shm_->abort(reason); });
  }
  try {
    guarded(CollectiveOp::kCreate,
            [&] { agree(CollectiveHeader(CollectiveOp::kCreate), deadline); });
  } catch (...) {
    if (mesh_) mesh_->drop_unsent_at_close();  // the destructor will not run
    throw;
  }
}

HierarchicalCollectives::~HierarchicalCollectives() {
  if (mesh_ && shm_->aborted()) mesh_->drop_unsent_at_close();
  mesh_.reset();  // stops the receiver thread, which touches shm_
  shm_.reset();
}

template <typename Body>
void HierarchicalCollectives::guarded(CollectiveOp op, Body&& body) {
  // Named only on failure: a barrier takes a fraction of a microsecond.
  const uint64_t seq = next_seq_;
  auto name = [op, seq] {
    return std::string(collective_op_name(op)) + " #" + std::to_string(seq);
  };
  if (shm_->aborted()) {
    raise(Status::kCommunication, name() + " on rank " + std::to_string(rank_) +
                                      ": the collective group is aborted: " + shm_->abort_reason());
  }
  try {
    body();
  } catch (const Error& error) {
    // Disagreeing arguments are found by every rank alike; the group stays in step and usable.
    if (error.status() == Status::kInvalidInput) throw;
    std::string reason = name() + " failed on rank " + std::to_string(rank_) + ": " + error.what();
    poison(reason);
    raise(error.status(), reason);
  } catch (const std::exception& error) {
    std::string reason = name() + " failed on rank " + std::to_string(rank_) + ": " + error.what();
    poison(reason);
    raise(Status::kSystem, reason);
  }
}

void HierarchicalCollectives::poison(const std::string& reason) {
  if (shm_->abort(reason) && mesh_) mesh_->send_abort(reason);
  if (mesh_) mesh_->interrupt();
}

void HierarchicalCollectives::abort(const std::string& reason) {
  poison("abort requested on rank " + std::to_string(rank_) + ": " + reason);
}

ZmqPeerMesh::HealthCheck HierarchicalCollectives::health(Deadline deadline) {
  return [this, deadline] { shm_->check_health(deadline); };
}

void HierarchicalCollectives::agree(CollectiveHeader header, Deadline deadline) {
  header.rank = rank_;
  header.seq = next_seq_++;
  seq_ = header.seq;
  header.encode(shm_->write_header(), size_);
  shm_->barrier(deadline);
  if (!mesh_ && headers_trivially_agree(*shm_, size_)) return;  // no need to decode
  local_headers_.clear();
  for (int m = 0; m < shm_->local_size(); ++m) {
    local_headers_.push_back(CollectiveHeader::decode(shm_->read_header(m), size_));
  }
  ShmVerdict verdict;
  if (!mesh_) {
    verdict = check_agreement(local_headers_);  // this node is the whole group
  } else {
    if (is_leader()) {
      exchange_headers_between_leaders(header, deadline, &verdict);
      shm_->write_verdict(verdict);
    }
    shm_->barrier(deadline);
    if (!is_leader()) verdict = shm_->read_verdict();
  }
  if (!verdict.ok) raise(Status::kInvalidInput, verdict.message);
}

void HierarchicalCollectives::exchange_headers_between_leaders(const CollectiveHeader& mine,
                                                               Deadline deadline,
                                                               ShmVerdict* verdict) {
  const size_t one = CollectiveHeader::encoded_bytes(size_);
  std::string packed(one * local_headers_.size(), '\0');
  for (size_t m = 0; m < local_headers_.size(); ++m) {
    local_headers_[m].encode(reinterpret_cast<std::byte*>(packed.data()) + m * one, size_);
  }
  for (size_t n = 0; n < node_ranks_.size(); ++n) {
    if (static_cast<int>(n) != my_node_) {
      mesh_->send(leader_of(static_cast<int>(n)), MeshKind::kHeaders, mine.seq, packed.data(),
                  packed.size());
    }
  }
  std::vector<CollectiveHeader> all(size_);
  for (const auto& h : local_headers_) all[h.rank] = h;
  for (size_t n = 0; n < node_ranks_.size(); ++n) {
    if (static_cast<int>(n) == my_node_) continue;
    const auto& ranks = node_ranks_[n];
    std::string payload = mesh_->receive(leader_of(static_cast<int>(n)), MeshKind::kHeaders,
                                         mine.seq, deadline, health(deadline));
    if (payload.size() != one * ranks.size()) {
      raise(Status::kCommunication, "the leader of node " + std::to_string(n) + " sent " +
                                        std::to_string(payload.size()) + " header bytes, not " +
                                        std::to_string(one * ranks.size()));
    }
    for (size_t i = 0; i < ranks.size(); ++i) {
      CollectiveHeader h = CollectiveHeader::decode(
          reinterpret_cast<const std::byte*>(payload.data()) + i * one, size_);
      if (h.rank != ranks[i]) {
        raise(Status::kCommunication, "the leader of node " + std::to_string(n) +
                                          " sent the header of rank " + std::to_string(h.rank) +
                                          " in place of rank " + std::to_string(ranks[i]));
      }
      all[h.rank] = std::move(h);
    }
  }
  *verdict = check_agreement(all);
}

void HierarchicalCollectives::run(const hal::CollectiveCall& call, Deadline deadline) {
  if (!staging_) return run_on_host(call, deadline);
  StagedCall staged(*staging_, call, rank_, size_, deadline);
  run_on_host(staged.host_call(), deadline);
  staged.finish(deadline);
}

void HierarchicalCollectives::run_on_host(const hal::CollectiveCall& call, Deadline deadline) {
  const CollectiveHeader header = header_for(call, rank_, size_);
  guarded(header.op, [&] {
    switch (call.kind) {
      case hal::CollectiveKind::kBarrier:
        agree(header, deadline);  // a barrier is exactly the agreement
        return;
      case hal::CollectiveKind::kBroadcast:
        agree(header, deadline);
        spread_from_root(call, deadline);
        return;
      case hal::CollectiveKind::kAllgather:
      case hal::CollectiveKind::kAllgatherv:
        gather_pieces(call, header, deadline);
        return;
      case hal::CollectiveKind::kAlltoallv:
        agree(header, deadline);
        exchange_pairwise(call, deadline);
        return;
    }
  });
}

void HierarchicalCollectives::spread_from_root(const hal::CollectiveCall& call, Deadline deadline) {
  const size_t bytes = call.bytes;
  const int root = call.root;
  if (bytes == 0) return;
  void* buffer = rank_ == root ? const_cast<void*>(call.send) : call.recv;
  std::vector<ByteSpan> data{{static_cast<std::byte*>(buffer), bytes}};
  const int root_node = node_of_[root];
  if (root_node == my_node_) {
    if (rank_ == root && mesh_) {
      std::vector<ConstByteSpan> out{{data[0].data, bytes}};
      for (size_t n = 0; n < node_ranks_.size(); ++n) {
        if (static_cast<int>(n) != my_node_) {
          mesh_->send_stream(leader_of(static_cast<int>(n)), seq_, out);
        }
      }
    }
    shm_broadcast(*shm_, data, local_index_of_[root], deadline);
  } else {
    if (is_leader()) mesh_->receive_stream(root, seq_, data, deadline, health(deadline));
    shm_broadcast(*shm_, data, 0, deadline);
  }
}

// allgather is the allgatherv whose every piece is `bytes` long, placed in rank order.
void HierarchicalCollectives::gather_pieces(const hal::CollectiveCall& call,
                                            const CollectiveHeader& header, Deadline deadline) {
  const bool uniform = call.kind == hal::CollectiveKind::kAllgather;
  std::vector<size_t> counts, displs;
  if (header.local_error.empty()) {
    for (int r = 0; r < size_; ++r) {
      counts.push_back(uniform ? call.bytes : call.recv_counts[r]);
      displs.push_back(uniform ? call.bytes * static_cast<size_t>(r) : call.recv_displs[r]);
    }
  }
  size_t largest = 0;
  for (size_t count : counts) largest = std::max(largest, count);
  auto* send = static_cast<const std::byte*>(call.send);
  auto* recv = static_cast<std::byte*>(call.recv);
  // Equal on every rank once the agreement passed (same counts, no local error anywhere).
  const bool staged = can_stage(header, largest);
  if (staged) shm_stage_piece(*shm_, send, counts[rank_]);
  agree(header, deadline);
  if (staged) {
    collect_staged(send, recv, counts, displs.data());
  } else {
    gather_data(send, recv, counts, displs.data(), deadline);
  }
}

// A single-node allgather whose every piece fits in one chunk moves its data through the
// agreement's barrier (shm_stage_piece before, shm_collect_pieces after).
bool HierarchicalCollectives::can_stage(const CollectiveHeader& header, size_t largest) const {
  return !mesh_ && header.local_error.empty() && largest <= shm_->chunk_bytes();
}

void HierarchicalCollectives::collect_staged(const std::byte* send, std::byte* recv,
                                             const std::vector<size_t>& counts,
                                             const size_t* displs) {
  std::vector<std::byte*> local_recv(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) local_recv[r] = piece(recv, displs[r], counts[r]);
  shm_collect_pieces(*shm_, send, counts, local_recv);
}

void HierarchicalCollectives::gather_data(const std::byte* send, std::byte* recv,
                                          const std::vector<size_t>& counts, const size_t* displs,
                                          Deadline deadline) {
  const auto& mine = node_ranks_[my_node_];
  std::vector<size_t> local_counts;
  std::vector<std::byte*> local_recv;
  for (int r : mine) {
    local_counts.push_back(counts[r]);
    local_recv.push_back(piece(recv, displs[r], counts[r]));
  }
  shm_allgatherv(*shm_, send, local_counts, local_recv, deadline);
  if (!mesh_) return;
  // Leaders trade their nodes' pieces, then each spreads the other nodes' pieces in its node.
  if (is_leader()) {
    std::vector<ConstByteSpan> ours;
    for (int r : mine) ours.push_back({piece(recv, displs[r], counts[r]), counts[r]});
    for (size_t n = 0; n < node_ranks_.size(); ++n) {
      if (static_cast<int>(n) != my_node_) {
        mesh_->send_stream(leader_of(static_cast<int>(n)), seq_, ours);
      }
    }
    for (size_t n = 0; n < node_ranks_.size(); ++n) {
      if (static_cast<int>(n) == my_node_) continue;
      std::vector<ByteSpan> theirs;
      for (int r : node_ranks_[n]) theirs.push_back({piece(recv, displs[r], counts[r]), counts[r]});
      mesh_->receive_stream(leader_of(static_cast<int>(n)), seq_, theirs, deadline,
                            health(deadline));
    }
  }
  std::vector<ByteSpan> remote;
  for (int r = 0; r < size_; ++r) {
    if (node_of_[r] != my_node_) remote.push_back({piece(recv, displs[r], counts[r]), counts[r]});
  }
  shm_broadcast(*shm_, remote, 0, deadline);
}

void HierarchicalCollectives::exchange_pairwise(const hal::CollectiveCall& call,
                                                Deadline deadline) {
  const size_t* send_counts = call.send_counts;
  const size_t* send_displs = call.send_displs;
  const size_t* recv_counts = call.recv_counts;
  const size_t* recv_displs = call.recv_displs;
  auto* in = static_cast<const std::byte*>(call.send);
  auto* out = static_cast<std::byte*>(call.recv);
  // Remote pieces leave first (sends never block), then the node's pieces move, then the
  // remote pieces for this rank are collected.
  if (mesh_) {
    for (int p = 0; p < size_; ++p) {
      if (node_of_[p] != my_node_ && send_counts[p] > 0) {
        mesh_->send_stream(p, seq_, {{piece(in, send_displs[p], send_counts[p]), send_counts[p]}});
      }
    }
  }
  const auto& mine = node_ranks_[my_node_];
  std::vector<ConstByteSpan> local_send;
  std::vector<ByteSpan> local_recv;
  size_t max_pair = 0;
  for (size_t i = 0; i < mine.size(); ++i) {
    const int r = mine[i];
    local_send.push_back({piece(in, send_displs[r], send_counts[r]), send_counts[r]});
    local_recv.push_back({piece(out, recv_displs[r], recv_counts[r]), recv_counts[r]});
    for (size_t j = 0; j < mine.size(); ++j) {
      if (i != j) max_pair = std::max<size_t>(max_pair, local_headers_[i].counts[mine[j]]);
    }
  }
  shm_alltoallv(*shm_, local_send, local_recv, max_pair, deadline);
  if (mesh_) {
    for (int p = 0; p < size_; ++p) {
      if (node_of_[p] != my_node_ && recv_counts[p] > 0) {
        mesh_->receive_stream(p, seq_,
                              {{piece(out, recv_displs[p], recv_counts[p]), recv_counts[p]}},
                              deadline, health(deadline));
      }
    }
  }
}

}  // namespace memloom::host
