// A WholeMemory communicator: a thin handle over a core::Group (ranks, nodes, collectives) plus the
// WholeMemory view of it (cliques, supported memory types, the distributed backend).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include "memloom/deadline.h"
#include "src/core/group.h"
#include "wholememory/wholememory.h"

namespace memloom::wholememory {

class Communicator {
 public:
  explicit Communicator(std::shared_ptr<core::Group> group);

  core::Group& group() { return *group_; }
  int rank() const { return group_->rank(); }
  int size() const { return group_->size(); }
  int local_size() const { return group_->local_size(); }
  bool intranode() const { return !group_->spans_nodes(); }
  clique_info_t clique_info() const;

  // Whether memory of this type can be allocated at this location on this communicator (the
  // values have been checked to be enumerators: see enum_arguments.h).
  bool supports(wholememory_memory_type_t type, wholememory_memory_location_t location) const;

  wholememory_distributed_backend_t distributed_backend() const { return backend_; }
  void set_distributed_backend(wholememory_distributed_backend_t backend);

  // Collective calls of one communicator run one at a time in this process (their messages must
  // not interleave); hold this lock across a whole collective call.
  std::mutex& collective_mutex() { return collective_mutex_; }

  void barrier(Deadline deadline);
  // Collective. Returns nullptr for a rank that passed WHOLEMEMORY_SPILT_NO_COLOR.
  std::shared_ptr<Communicator> split(int color, int key, Deadline deadline);

  // Allocations alive on this communicator; it cannot be destroyed while there are any.
  std::atomic<int>& live_allocations() { return live_allocations_; }
  // Set for the local/cross communicators a HIERARCHY allocation creates and owns.
  bool owned_by_allocation() const { return owned_by_allocation_; }
  void set_owned_by_allocation() { owned_by_allocation_ = true; }

 private:
  std::shared_ptr<core::Group> group_;
  wholememory_distributed_backend_t backend_ = WHOLEMEMORY_DB_NCCL;
  std::mutex collective_mutex_;
  std::atomic<int> live_allocations_{0};
  bool owned_by_allocation_ = false;
};

// The deadline of one collective call: MEMLOOM_TIMEOUT_S from now.
Deadline collective_deadline();

}  // namespace memloom::wholememory
