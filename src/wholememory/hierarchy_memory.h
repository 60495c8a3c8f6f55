// HIERARCHY: the partitions of the ranks of one node form one contiguous range mapped by every rank
// of that node (in rank order); other nodes' partitions are not mapped. The allocation owns a local
// communicator (my node's ranks) and a cross communicator (the ranks with my local rank).
#pragma once

#include "src/wholememory/contiguous_range.h"
#include "src/wholememory/memory_handle.h"

namespace memloom::wholememory {

class HierarchyMemory final : public MemoryHandle {
 public:
  HierarchyMemory(std::shared_ptr<Communicator> comm, MemorySpec spec, std::string identity,
                  Deadline deadline);
  // Unmaps the range, then retires the local and cross communicators' store keys where nothing
  // else holds them (see retire_if_unshared in the .cpp).
  ~HierarchyMemory() override;

  std::shared_ptr<Communicator> local_comm() const override { return local_; }
  std::shared_ptr<Communicator> cross_comm() const override { return cross_; }

 private:
  std::shared_ptr<Communicator> local_;
  std::shared_ptr<Communicator> cross_;
  std::unique_ptr<ContiguousRange> range_;
};

}  // namespace memloom::wholememory
