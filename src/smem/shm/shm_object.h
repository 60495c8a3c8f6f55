// One SHM (symmetric memory) object: every rank contributes a slot of the same size; the slots of
// same-node ranks are mapped in one GVA range at the same base in every process.
//
// Layout of the reserved range (S = symmetric size, C = SMEM_SHM_EXTRA_CONTEXT_STRIDE, n ranks):
//
//   base                     base + n*C = gva
//   | ctx 0 | ctx 1 | ... | ctx n-1 | slot 0 | slot 1 | ... | slot n-1 |
//
// ctx r holds rank r's extra context (data at its start, uint32 size at +64 KiB). Only blocks and
// slots of same-node ranks are mapped; the rest of the range stays reserved and inaccessible.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "hw/hal/memory_domain.h"
#include "hw/hal/stream.h"
#include "src/core/group.h"
#include "src/core/shared_segments.h"
#include "src/smem/gva_layout.h"
#include "src/smem/shm/shm_global_exit.h"
#include "src/smem/smem_world.h"

namespace memloom::smem {

struct ShmCreateArgs {
  uint32_t id = 0;
  int rank_size = 0;
  int rank = 0;
  uint64_t symmetric_size = 0;
  uint32_t data_ops = 0;
  uint32_t flags = 0;
  std::chrono::milliseconds create_timeout{120000};
  std::chrono::milliseconds control_timeout{120000};
};

class ShmObject {
 public:
  // Collective over args.rank_size ranks. `instance` counts this process's earlier objects with the
  // same id, so every rank derives the same store keys for this incarnation.
  static std::unique_ptr<ShmObject> create(SmemWorld& world, const ShmCreateArgs& args,
                                           uint64_t instance);
  ~ShmObject();

  uint32_t id() const { return id_; }
  int rank() const { return group_->rank(); }
  int size() const { return group_->size(); }
  uint64_t symmetric_size() const { return slots_.stride(); }
  void* gva() const { return reinterpret_cast<void*>(slots_.base()); }

  // context non-null, size in [1, SMEM_SHM_EXTRA_CONTEXT_SIZE_MAX]: checked by the caller.
  void set_extra_context(const void* context, uint32_t size);
  // Null for a rank on another node (its block is not mapped here).
  void* extra_context_address(int rank) const;
  uint32_t extra_context_size(int rank);

  void barrier();
  void allgather(const void* send, uint32_t send_size, void* recv, uint32_t recv_size);
  void subgroup_barrier(const std::string& key, int size, int rank);
  void subgroup_allgather(const std::string& key, int size, int rank, const void* send,
                          uint32_t send_size, void* recv, uint32_t recv_size);

  // A set of smem_shm_data_op_type: how this rank reaches `remote`'s slot.
  uint32_t reach(int remote) const;

  int32_t alloc_value(uint32_t limit);
  void release_value(int32_t value);

  void register_exit(void (*handler)(int));
  void global_exit(int status);

 private:
  ShmObject(uint32_t id, std::shared_ptr<core::Group> group, std::shared_ptr<store::Client> client,
            std::chrono::milliseconds control_timeout);
  Deadline control_deadline() const { return Deadline::after(control_timeout_); }
  core::Group& subgroup(const std::string& key, int size, int rank);
  void* context_block(int rank) const;
  static void allgather_on(core::Group& group, const void* send, uint32_t send_size, void* recv,
                           uint32_t recv_size, Deadline deadline);

  uint32_t id_;
  std::shared_ptr<core::Group> group_;
  std::shared_ptr<store::Client> client_;
  std::chrono::milliseconds control_timeout_;
  std::unique_ptr<hal::Stream> stream_;  // moves extra context bytes (device memory)
  core::SegmentSet data_;
  core::SegmentSet contexts_;
  std::unique_ptr<hal::VaRange> range_;  // destroyed (unmapped) before the segments
  GvaLayout slots_;
  GvaLayout context_blocks_;
  std::mutex collective_mutex_;  // one collective at a time per group
  std::map<std::string, std::shared_ptr<core::Group>> subgroups_;
  std::unique_ptr<ShmGlobalExit> exit_;
};

}  // namespace memloom::smem
