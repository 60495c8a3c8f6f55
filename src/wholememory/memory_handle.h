// A WholeMemory allocation: the partition plan, where each rank's partition is mapped in this
// process, and the global pointer/reference where the type has one. One subclass per memory type
// owns the mappings (continuous_memory.h, chunked_memory.h, distributed_memory.h,
// hierarchy_memory.h). Device and host locations share each type's code; only the MemoryKind of
// the segments differs.
//
//   type         | who allocates                  | mapped in each process          | global view
//   -------------+--------------------------------+---------------------------------+-------------
//   CONTINUOUS   | every rank: the pages starting | every partition, one range      | pointer, gref
//   (one node)   | in its partition               | (ContiguousRange)               |
//   CHUNKED      | every rank: its partition,     | every partition, each on its    | gref (table
//   (one node)   | padded to the granularity      | own (map_anywhere)              | of pointers)
//   CHUNKED HOST | as CONTINUOUS                  | as CONTINUOUS                   | pointer, gref
//   DISTRIBUTED  | every rank: its partition      | only its own partition          | none
//   HIERARCHY    | every rank: pages, per node    | the node's partitions, one      | pointer, gref
//                |                                | range (ContiguousRange)         | on one node
//
// Segments are shared between the ranks of a node through core::exchange_segments (fds); nothing
// is ever mapped across nodes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hw/hal/memory_domain.h"
#include "memloom/deadline.h"
#include "src/wholememory/communicator.h"
#include "src/wholememory/operation_gate.h"
#include "src/wholememory/partition_plan.h"
#include "src/wholememory/reference_table.h"
#include "wholememory/wholememory.h"

namespace memloom::wholememory {

struct MemorySpec {
  size_t total_size = 0;
  wholememory_memory_type_t type = WHOLEMEMORY_MT_NONE;
  wholememory_memory_location_t location = WHOLEMEMORY_ML_NONE;
  size_t granularity = 0;
  PartitionPlan plan;
};

class MemoryHandle {
 public:
  virtual ~MemoryHandle();
  MemoryHandle(const MemoryHandle&) = delete;
  MemoryHandle& operator=(const MemoryHandle&) = delete;

  Communicator& comm() { return *comm_; }
  const MemorySpec& spec() const { return spec_; }
  const PartitionPlan& plan() const { return spec_.plan; }
  // Names the allocation identically on every rank (for checking that ranks free the same one).
  const std::string& identity() const { return identity_; }
  // The device this process allocated on (the platform's current device at allocation time).
  int device() const { return device_; }

  size_t local_size() const { return plan().sizes[rank_]; }
  size_t local_offset() const { return plan().offsets[rank_]; }
  void* local_pointer() const { return rank_pointers_[rank_]; }
  // Rank `rank`'s partition as mapped here; false when it is not mapped in this process.
  bool rank_pointer(int rank, void** pointer) const;
  // The whole allocation as one range, or null when this type has none.
  void* global_pointer() const { return global_pointer_; }
  bool has_global_reference() const { return table_ != nullptr; }
  wholememory_gref_t global_reference() const { return gref_; }

  // HIERARCHY only: the ranks of my node / the ranks with my local rank.
  virtual std::shared_ptr<Communicator> local_comm() const { return nullptr; }
  virtual std::shared_ptr<Communicator> cross_comm() const { return nullptr; }

  // Operations in flight on this memory (operation_gate.h).
  OperationGate& gate() { return gate_; }

 protected:
  MemoryHandle(std::shared_ptr<Communicator> comm, MemorySpec spec, std::string identity);

  hal::MemoryKind kind() const;
  void set_rank_pointer(int rank, void* pointer);
  // Every partition at base + offset; also builds the global reference.
  void publish_contiguous(char* base);
  // Builds a CHUNKED global reference over the per-rank pointers set so far.
  void publish_chunked();

 private:
  std::shared_ptr<Communicator> comm_;
  MemorySpec spec_;
  std::string identity_;
  int rank_;
  int device_;
  std::vector<void*> rank_pointers_;
  std::vector<bool> mapped_;
  void* global_pointer_ = nullptr;
  std::unique_ptr<ReferenceTable> table_;
  wholememory_gref_t gref_{};
  OperationGate gate_;
};

// Collective over comm: allocates and maps memory of spec.type; every rank fails together when
// any rank fails. The spec has been agreed on by every rank.
std::shared_ptr<MemoryHandle> create_memory_handle(std::shared_ptr<Communicator> comm,
                                                   MemorySpec spec, std::string identity,
                                                   Deadline deadline);

// Drops a reference the registry held to freed memory: closes its gate and waits (by `deadline`)
// for the operations using it and the stream work they enqueued, so that the memory is unmapped
// (when this was the last reference) only once nothing touches it. Memory still in use at the
// deadline is kept mapped until the process ends, with a warning: a leak, never a copy over
// unmapped pages.
void retire_memory(std::shared_ptr<MemoryHandle> memory, Deadline deadline);

}  // namespace memloom::wholememory
