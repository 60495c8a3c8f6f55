// Collectives over a fixed group of ranks. Every call takes a deadline and throws
// kCommunication (peer gone) or kTimeout (deadline passed) instead of hanging. After a failure the
// object is poisoned: later calls fail at once, on every rank that can see the poison.
#pragma once

#include <cstddef>
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

class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  virtual void barrier(Deadline deadline) = 0;
  virtual void broadcast(void* buffer, size_t bytes, int root, Deadline deadline) = 0;
  // recv holds size() * bytes: rank r's contribution at r * bytes.
  virtual void allgather(const void* send, void* recv, size_t bytes, Deadline deadline) = 0;
  // Rank r contributes recv_counts[r] bytes, placed at recv + recv_displs[r] on every rank.
  virtual void allgatherv(const void* send, void* recv, const size_t* recv_counts,
                          const size_t* recv_displs, Deadline deadline) = 0;
  // Sends send_counts[p] bytes from send + send_displs[p] to rank p, receives recv_counts[p]
  // bytes from p into recv + recv_displs[p]. Counts must agree pairwise (kInvalidInput otherwise).
  virtual void alltoallv(const void* send, const size_t* send_counts, const size_t* send_displs,
                         void* recv, const size_t* recv_counts, const size_t* recv_displs,
                         Deadline deadline) = 0;
  // Marks the group failed so peers blocked in a collective return an error promptly.
  virtual void abort(const std::string& reason) = 0;
};

}  // namespace memloom::hal
