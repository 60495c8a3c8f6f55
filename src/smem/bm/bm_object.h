// One BM (big memory) object: device (HBM) and host (DRAM) contributions of every member rank,
// each forming one GVA range with one slot per rank, at the same base in every process.
//
//   device range: | slot 0 | slot 1 | ... |   slot r = base_d + r * stride_d  (localHBMSize used)
//   host range:   | slot 0 | slot 1 | ... |   slot r = base_h + r * stride_h  (localDRAMSize used)
//
// Creation is collective and maps the same-node ranks' memory at once. A rank's first join is
// collective too, as in MemFabric (every member waits until all have joined, so a copy to any
// peer right after it succeeds); later leaves and joins are local (a shared membership word for
// same-node peers, transport exposure for other nodes), visible to every peer when they return,
// so ranks come and go while others keep copying.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "hw/hal/memory_domain.h"
#include "hw/hal/transport.h"
#include "smem/host/smem_bm_def.h"
#include "src/core/group.h"
#include "src/core/shared_segments.h"
#include "src/smem/bm/bm_copy_engine.h"
#include "src/smem/bm/bm_membership.h"
#include "src/smem/gva_layout.h"
#include "src/smem/smem_world.h"

namespace memloom::smem {

struct BmCreateArgs {
  uint32_t id = 0;
  int member_size = 0;
  uint32_t data_ops = 0;
  uint64_t local_dram = 0;
  uint64_t local_hbm = 0;
  uint64_t dram_stride = 0;  // 0: local_dram
  uint64_t hbm_stride = 0;   // 0: local_hbm
  uint32_t flags = 0;
  std::chrono::milliseconds create_timeout{120000};
  std::chrono::milliseconds control_timeout{120000};
};

// One entry of a copy request, as the caller passed it.
struct CopyEntry {
  const void* src;
  void* dst;
  size_t bytes;
};

class BmObject {
 public:
  // Collective over the world's ranks 0 .. member_size-1; `instance` as for ShmObject::create.
  static std::unique_ptr<BmObject> create(SmemWorld& world, const BmCreateArgs& args,
                                          uint64_t instance);
  ~BmObject();

  uint32_t id() const { return id_; }
  int rank() const { return group_->rank(); }
  int size() const { return group_->size(); }
  const GvaLayout& device_range() const { return device_; }
  const GvaLayout& host_range() const { return host_; }

  // Returns this rank's own slot (device, or host when it contributes no device memory). The first
  // call waits (control timeout) until every member has joined once.
  void* join();
  void leave();
  bool joined() const { return membership_->joined(); }

  void copy(const std::vector<CopyEntry>& entries, smem_bm_copy_type type, bool async);
  void wait() { engine_->wait(); }

  uint64_t local_size(smem_bm_mem_type type) const;
  void* slot(smem_bm_mem_type type, int rank) const;
  // The rank whose slot of either range holds `gva`, or -1.
  int rank_of(const void* gva) const;

  void register_user_memory(void* address, size_t size);
  void unregister_user_memory(void* address);

 private:
  BmObject(uint32_t id, std::shared_ptr<core::Group> group) : id_(id), group_(std::move(group)) {}
  ResolvedCopy resolve(const CopyEntry& entry, smem_bm_copy_type type) const;
  CopySide resolve_side(const void* address, size_t bytes, CopySide::Space expected,
                        const char* what) const;
  void check_joined(const CopySide& side) const;
  void expose(bool on);
  void wait_for_every_first_join();

  uint32_t id_;
  std::shared_ptr<core::Group> group_;
  core::SegmentSet device_segments_;
  core::SegmentSet host_segments_;
  std::unique_ptr<hal::VaRange> device_va_;  // destroyed (unmapped) before the segments
  std::unique_ptr<hal::VaRange> host_va_;
  GvaLayout device_;
  GvaLayout host_;
  std::unique_ptr<BmMembership> membership_;
  std::unique_ptr<hal::Transport> transport_;  // only when members span nodes
  std::unique_ptr<BmCopyEngine> engine_;       // destroyed first: drains asynchronous copies
  std::chrono::milliseconds control_timeout_{120000};
  bool joined_once_ = false;  // under state_mutex_
  std::mutex state_mutex_;    // join/leave and user registrations
  std::map<uintptr_t, size_t> user_memory_;
};

}  // namespace memloom::smem
