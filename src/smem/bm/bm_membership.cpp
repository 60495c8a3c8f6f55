#include "src/smem/bm/bm_membership.h"

#include "memloom/error.h"
#include "src/base/log.h"
#include "src/core/platform_loader.h"
#include "src/smem/rank_agreement.h"

namespace memloom::smem {
namespace {

std::atomic<uint32_t>* word_at(void* mapping) {
  return static_cast<std::atomic<uint32_t>*>(mapping);
}

}  // namespace

std::unique_ptr<BmMembership> BmMembership::create(core::Group& group, Deadline deadline) {
  static_assert(std::atomic<uint32_t>::is_always_lock_free, "the word is shared between processes");
  auto& domain = core::platform().memory_domain();
  std::unique_ptr<BmMembership> board(new BmMembership());
  board->rank_ = group.rank();
  board->mapping_size_ = domain.granularity(hal::MemoryKind::kHost);
  board->segments_ =
      core::exchange_segments(group, hal::MemoryKind::kHost, -1, board->mapping_size_, deadline);
  board->mappings_.assign(static_cast<size_t>(group.size()), nullptr);
  run_on_all_or_none(
      group, "mapping the BM membership words",
      [&] {
        for (size_t r = 0; r < board->segments_.segments.size(); ++r) {
          if (!board->segments_.segments[r]) continue;
          board->mappings_[r] = domain.map_anywhere(*board->segments_.segments[r]);
        }
        board->set_joined(false);
      },
      deadline);
  return board;
}

BmMembership::~BmMembership() {
  auto& domain = core::platform().memory_domain();
  for (void* mapping : mappings_) {
    if (mapping == nullptr) continue;
    try {
      domain.unmap_anywhere(mapping, mapping_size_);
    } catch (const std::exception& error) {
      MEMLOOM_LOG(kWarn, "smem_bm: unmapping a membership word failed: " << error.what());
    }
  }
}

void BmMembership::set_joined(bool joined) {
  word_at(mappings_.at(static_cast<size_t>(rank_)))
      ->store(joined ? 1u : 0u, std::memory_order_release);
}

bool BmMembership::is_joined(int rank) const {
  void* mapping = mappings_.at(static_cast<size_t>(rank));
  if (mapping == nullptr) {
    raise(Status::kLogic,
          "rank " + std::to_string(rank) + " is on another node; its membership is not mapped");
  }
  return word_at(mapping)->load(std::memory_order_acquire) == 1u;
}

}  // namespace memloom::smem
