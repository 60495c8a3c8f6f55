#include "src/wholememory/memory_handle.h"

#include <mutex>
#include <vector>

#include "memloom/error.h"
#include "src/base/log.h"
#include "src/core/platform_loader.h"
#include "src/wholememory/chunked_memory.h"
#include "src/wholememory/collective_check.h"
#include "src/wholememory/continuous_memory.h"
#include "src/wholememory/distributed_memory.h"
#include "src/wholememory/hierarchy_memory.h"

namespace memloom::wholememory {

MemoryHandle::MemoryHandle(std::shared_ptr<Communicator> comm, MemorySpec spec,
                           std::string identity)
    : comm_(std::move(comm)),
      spec_(std::move(spec)),
      identity_(std::move(identity)),
      rank_(comm_->rank()),
      device_(core::platform().current_device()),
      rank_pointers_(comm_->size(), nullptr),
      mapped_(comm_->size(), false) {
  ++comm_->live_allocations();
}

MemoryHandle::~MemoryHandle() {
  --comm_->live_allocations();
}

hal::MemoryKind MemoryHandle::kind() const {
  return spec_.location == WHOLEMEMORY_ML_HOST ? hal::MemoryKind::kHost : hal::MemoryKind::kDevice;
}

bool MemoryHandle::rank_pointer(int rank, void** pointer) const {
  MEMLOOM_CHECK_ARG(rank >= 0 && rank < comm_->size(), "rank " + std::to_string(rank) +
                                                           " is out of range [0, " +
                                                           std::to_string(comm_->size()) + ")");
  if (!mapped_[rank]) return false;
  *pointer = rank_pointers_[rank];
  return true;
}

void MemoryHandle::set_rank_pointer(int rank, void* pointer) {
  rank_pointers_.at(rank) = pointer;
  mapped_.at(rank) = true;
}

void MemoryHandle::publish_contiguous(char* base) {
  for (int r = 0; r < comm_->size(); ++r) set_rank_pointer(r, base + plan().offsets[r]);
  global_pointer_ = base;
  table_ = std::make_unique<ReferenceTable>(kind(), device_, std::vector<void*>{}, plan().offsets);
  gref_.pointer = base;
  gref_.rank_memory_offsets = table_->offsets();
  gref_.world_size = comm_->size();
  gref_.stride = 0;
  gref_.same_chunk = plan().same_chunk;
}

void MemoryHandle::publish_chunked() {
  table_ = std::make_unique<ReferenceTable>(kind(), device_, rank_pointers_, plan().offsets);
  gref_.pointer = table_->pointers();
  gref_.rank_memory_offsets = table_->offsets();
  gref_.world_size = comm_->size();
  gref_.stride = plan().stride;
  gref_.same_chunk = plan().same_chunk;
}

std::shared_ptr<MemoryHandle> create_memory_handle(std::shared_ptr<Communicator> comm,
                                                   MemorySpec spec, std::string identity,
                                                   Deadline deadline) {
  std::shared_ptr<MemoryHandle> handle;
  auto outcome = capture_failure([&] {
    switch (spec.type) {
      case WHOLEMEMORY_MT_CONTINUOUS:
        handle = std::make_shared<ContinuousMemory>(comm, std::move(spec), identity, deadline);
        break;
      case WHOLEMEMORY_MT_CHUNKED:
        handle = std::make_shared<ChunkedMemory>(comm, std::move(spec), identity, deadline);
        break;
      case WHOLEMEMORY_MT_DISTRIBUTED:
        handle = std::make_shared<DistributedMemory>(comm, std::move(spec), identity);
        break;
      case WHOLEMEMORY_MT_HIERARCHY:
        handle = std::make_shared<HierarchyMemory>(comm, std::move(spec), identity, deadline);
        break;
      default:
        raise(Status::kLogic,
              "no implementation for memory type " + std::to_string(static_cast<int>(spec.type)));
    }
  });
  // A rank that failed locally (mapping, address space) must not leave the others with a handle.
  fail_together(comm->group(), "wholememory_malloc", outcome, deadline);
  return handle;
}

void retire_memory(std::shared_ptr<MemoryHandle> memory, Deadline deadline) {
  if (memory->gate().close(deadline)) return;  // `memory` goes here: unmapped if it was the last
  // Never destroyed, like the Runtime: what is kept here is meant to outlive every user.
  static auto* kept_mutex = new std::mutex();
  static auto* kept = new std::vector<std::shared_ptr<MemoryHandle>>();
  MEMLOOM_LOG(kWarn, "WholeMemory: operations on freed allocation "
                         << memory->identity()
                         << " did not finish by the deadline; its memory stays mapped until exit");
  std::lock_guard<std::mutex> lock(*kept_mutex);
  kept->push_back(std::move(memory));
}

}  // namespace memloom::wholememory
