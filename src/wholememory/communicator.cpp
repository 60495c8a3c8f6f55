#include "src/wholememory/communicator.h"

#include "memloom/error.h"

namespace memloom::wholememory {

Deadline collective_deadline() {
  return Deadline::after(core::default_collective_timeout());
}

Communicator::Communicator(std::shared_ptr<core::Group> group) : group_(std::move(group)) {
  MEMLOOM_CHECK_ARG(group_ != nullptr, "communicator needs a group");
}

clique_info_t Communicator::clique_info() const {
  // A clique is the set of ranks that can map each other's device memory: one node.
  const auto& local = group_->local_ranks();
  clique_info_t info{};
  info.is_in_clique = 1;
  info.clique_first_rank = local.front();
  info.clique_rank = group_->local_rank();
  info.clique_rank_num = group_->local_size();
  info.clique_id = group_->node_index_of(group_->rank());
  info.clique_num = group_->node_count();
  return info;
}

bool Communicator::supports(wholememory_memory_type_t type,
                            wholememory_memory_location_t location) const {
  if (type == WHOLEMEMORY_MT_NONE || location == WHOLEMEMORY_ML_NONE) return false;
  switch (type) {
    case WHOLEMEMORY_MT_CONTINUOUS:
    case WHOLEMEMORY_MT_CHUNKED:
      // Every rank maps every partition, which needs every rank on one node.
      return intranode();
    case WHOLEMEMORY_MT_DISTRIBUTED:
    case WHOLEMEMORY_MT_HIERARCHY:
      return true;
    default:
      return false;
  }
}

void Communicator::set_distributed_backend(wholememory_distributed_backend_t backend) {
  switch (backend) {
    case WHOLEMEMORY_DB_NCCL:
      backend_ = backend;
      return;
    case WHOLEMEMORY_DB_NVSHMEM:
      raise(Status::kNotSupported, "memloom is not built with NVSHMEM");
    default:
      raise(Status::kInvalidInput, "distributed backend " +
                                       std::to_string(static_cast<int>(backend)) +
                                       " is not WHOLEMEMORY_DB_NCCL or WHOLEMEMORY_DB_NVSHMEM");
  }
}

void Communicator::barrier(Deadline deadline) {
  group_->collectives().barrier(deadline);
}

std::shared_ptr<Communicator> Communicator::split(int color, int key, Deadline deadline) {
  // A negative color other than "no color" is refused, but only after taking part in the exchange
  // so the other ranks are not left waiting.
  const bool bad_color = color < 0 && color != WHOLEMEMORY_SPILT_NO_COLOR;
  auto group = group_->split(bad_color ? WHOLEMEMORY_SPILT_NO_COLOR : color, key, deadline);
  if (bad_color) {
    raise(Status::kInvalidInput,
          "split color must be non-negative or WHOLEMEMORY_SPILT_NO_COLOR, got " +
              std::to_string(color));
  }
  if (!group) return nullptr;
  return std::make_shared<Communicator>(std::move(group));
}

}  // namespace memloom::wholememory
