#include "src/wholememory/hierarchy_memory.h"

namespace memloom::wholememory {
namespace {

// An allocation's communicator is split from the user's for this allocation alone; its keys in
// the store would stay for good after every free (18 keys per HIERARCHY allocation on 4 ranks),
// so the group retires them, unless the user still holds the communicator (a handle from
// wholememory_get_local_communicator, or an allocation on it) or split it: those keep using keys
// under its prefix.
void retire_if_unshared(std::shared_ptr<Communicator>& comm) {
  if (comm == nullptr) return;
  if (comm.use_count() == 1 && !comm->group().has_children()) comm->group().retire();
  comm.reset();
}

}  // namespace

HierarchyMemory::HierarchyMemory(std::shared_ptr<Communicator> comm, MemorySpec spec,
                                 std::string identity, Deadline deadline)
    : MemoryHandle(std::move(comm), std::move(spec), std::move(identity)) {
  auto& group = this->comm().group();
  const int me = group.rank();
  // Keys keep the communicator's rank order inside each new communicator.
  local_ = this->comm().split(group.node_index_of(me), me, deadline);
  cross_ = this->comm().split(group.local_rank(), group.node_index_of(me), deadline);
  local_->set_owned_by_allocation();
  cross_->set_owned_by_allocation();

  const auto& node_ranks = group.local_ranks();
  std::vector<size_t> node_sizes;
  for (int r : node_ranks) node_sizes.push_back(plan().sizes[r]);
  range_ = ContiguousRange::create(local_->group(), node_sizes, kind(), device(), deadline);
  if (this->comm().intranode()) {
    publish_contiguous(range_->base());
    return;
  }
  size_t position = 0;
  for (int r : node_ranks) {
    set_rank_pointer(r, range_->base() + position);
    position += plan().sizes[r];
  }
}

HierarchyMemory::~HierarchyMemory() {
  range_.reset();
  retire_if_unshared(local_);
  retire_if_unshared(cross_);
}

}  // namespace memloom::wholememory
