// Collectives over a fixed group of ranks. Every call takes a deadline and throws
// kCommunication (peer gone) or kTimeout (deadline passed) instead of hanging. After a failure the
// object is poisoned: later calls fail at once, on every rank that can see the poison.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "memloom/deadline.h"

namespace memloom::hal {

// Who is in the group and where each member lives. node_of_rank[r] is rank r's node identity;
// ranks with equal identity may share memory.
struct GroupSpec {
  int rank = 0;
  int size = 0;
  std::vector<std::string> node_of_rank;
  std::vector<int> pid_of_rank;  // lets same-node members detect a dead peer without waiting
  // The group carries control messages only (barriers, allgathers of a few bytes from host
  // memory): a backend may serve it with host-memory collectives instead of a device
  // communicator. Every member passes the same value.
  bool control_only = false;
};

enum class CollectiveKind : uint32_t { kBarrier, kBroadcast, kAllgather, kAllgatherv, kAlltoallv };

// One collective call with its buffers, as the public methods of Collectives pack it. Backends
// implement a single run() over it (as NCCL funnels every collective through one enqueue path), so
// what every operation needs alike (argument checks, the agreement header, staging device
// buffers through host memory) is written once, over the call, not once per operation.
struct CollectiveCall {
  CollectiveKind kind = CollectiveKind::kBarrier;
  const void* send = nullptr;  // broadcast: the buffer, read on the root
  void* recv = nullptr;        // broadcast: the same buffer, written on the other ranks
  size_t bytes = 0;            // broadcast: the buffer's size; allgather: each rank's piece
  int root = 0;                // broadcast
  const size_t* send_counts = nullptr;  // alltoallv
  const size_t* send_displs = nullptr;  // alltoallv
  const size_t* recv_counts = nullptr;  // allgatherv, alltoallv
  const size_t* recv_displs = nullptr;  // allgatherv, alltoallv
};

class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  void barrier(Deadline deadline) { run({CollectiveKind::kBarrier}, deadline); }
  void broadcast(void* buffer, size_t bytes, int root, Deadline deadline) {
    CollectiveCall call{CollectiveKind::kBroadcast, buffer, buffer, bytes};
    call.root = root;
    run(call, deadline);
  }
  // recv holds size() * bytes: rank r's contribution at r * bytes.
  void allgather(const void* send, void* recv, size_t bytes, Deadline deadline) {
    run({CollectiveKind::kAllgather, send, recv, bytes}, deadline);
  }
  // Rank r contributes recv_counts[r] bytes, placed at recv + recv_displs[r] on every rank.
  void allgatherv(const void* send, void* recv, const size_t* recv_counts,
                  const size_t* recv_displs, Deadline deadline) {
    CollectiveCall call{CollectiveKind::kAllgatherv, send, recv};
    call.recv_counts = recv_counts;
    call.recv_displs = recv_displs;
    run(call, deadline);
  }
  // Sends send_counts[p] bytes from send + send_displs[p] to rank p, receives recv_counts[p]
  // bytes from p into recv + recv_displs[p]. Counts must agree pairwise (kInvalidInput otherwise).
  void alltoallv(const void* send, const size_t* send_counts, const size_t* send_displs, void* recv,
                 const size_t* recv_counts, const size_t* recv_displs, Deadline deadline) {
    CollectiveCall call{CollectiveKind::kAlltoallv, send, recv};
    call.send_counts = send_counts;
    call.send_displs = send_displs;
    call.recv_counts = recv_counts;
    call.recv_displs = recv_displs;
    run(call, deadline);
  }

  // Carries out one call; what each operation means is said at its method above.
  virtual void run(const CollectiveCall& call, Deadline deadline) = 0;
  // Marks the group failed so peers blocked in a collective return an error promptly.
  virtual void abort(const std::string& reason) = 0;
};

}  // namespace memloom::hal
