#include "hw/host/overlapping_batches.h"

namespace memloom::host {

OverlappingBatches::Hold::~Hold() {
  if (owner_ == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(owner_->mutex_);
    owner_->spans_.erase(span_);
  }
  owner_->released_.notify_all();
}

std::optional<OverlappingBatches::Hold> OverlappingBatches::enter(uint64_t begin, uint64_t end,
                                                                  bool writes, Deadline deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto conflict = [&] {
    for (const Span& span : spans_) {
      if (span.begin < end && begin < span.end && (span.writes || writes)) return true;
    }
    return false;
  };
  if (!released_.wait_until(lock, deadline.time_point(), [&] { return !conflict(); })) {
    return std::nullopt;
  }
  return Hold(*this, spans_.insert(spans_.end(), Span{begin, end, writes}));
}

}  // namespace memloom::host
