#include "src/wholememory/ops/bad_index_ring.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "memloom/error.h"
#include "src/base/log.h"
#include "src/core/platform_loader.h"
#include "src/wholememory/quiet_release.h"

namespace memloom::wholememory {

BadIndexRing::BadIndexRing(int device) {
  auto& domain = core::platform().memory_domain();
  segment_ = domain.allocate(hal::MemoryKind::kDevice, device,
                             domain.granularity(hal::MemoryKind::kDevice));
  device_words_ = static_cast<unsigned long long*>(domain.map_anywhere(*segment_));
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  host_bytes_ = ((kSlots + 1) * sizeof(unsigned long long) + page - 1) / page * page;
  host_words_ = static_cast<unsigned long long*>(std::aligned_alloc(page, host_bytes_));
  if (host_words_ == nullptr) {
    domain.unmap_anywhere(device_words_, segment_->size());
    raise(Status::kOutOfMemory, "cannot allocate the bad-index readback page");
  }
  std::memset(host_words_, 0, host_bytes_);
  try {
    // Registered so that the copies into it stay asynchronous on the CUDA backend.
    domain.register_user_memory(host_words_, host_bytes_);
  } catch (...) {
    std::free(host_words_);
    domain.unmap_anywhere(device_words_, segment_->size());
    throw;
  }
}

BadIndexRing::~BadIndexRing() {
  release_quietly("the bad-index slots still pending", [&] { collect(true); });
  auto& domain = core::platform().memory_domain();
  release_quietly("the bad-index readback page",
                  [&] { domain.unregister_user_memory(host_words_); });
  std::free(host_words_);
  release_quietly("the bad-index device words",
                  [&] { domain.unmap_anywhere(device_words_, segment_->size()); });
}

unsigned long long* BadIndexRing::begin(hal::Stream& stream, const char* operation, int64_t bound,
                                        Deadline deadline) {
  collect(false);
  if (pending_.size() == kSlots) {
    // Every slot is in flight: the oldest is needed again.
    pending_.front().done->synchronize(deadline);
    collect(false);
  }
  const size_t slot = next_slot_;
  next_slot_ = (next_slot_ + 1) % kSlots;
  pending_.push_back(Pending{slot, operation, bound, nullptr});
  stream.copy(device_words_ + slot, host_words_ + kSlots, sizeof(unsigned long long));
  return device_words_ + slot;
}

void BadIndexRing::end(hal::Stream& stream) {
  if (pending_.empty() || pending_.back().done != nullptr) {
    raise(Status::kLogic, "BadIndexRing::end without a matching begin");
  }
  const size_t slot = pending_.back().slot;
  stream.copy(host_words_ + slot, device_words_ + slot, sizeof(unsigned long long));
  pending_.back().done = stream.record();
}

void BadIndexRing::inspect(const Pending& pending) {
  const unsigned long long seen = host_words_[pending.slot];
  if (seen == 0) return;
  const std::string message = std::string(pending.operation) + ": index " +
                              std::to_string(seen - 1) + " is past the table's " +
                              std::to_string(pending.bound) + " rows; its row was skipped";
  MEMLOOM_LOG(kError, message);
  if (!first_error_) first_error_ = message;
}

void BadIndexRing::collect(bool all_complete) {
  while (!pending_.empty()) {
    Pending& oldest = pending_.front();
    // A slot whose kernel was never enqueued (its launch threw) holds nothing to report.
    if (oldest.done != nullptr) {
      if (!all_complete && !oldest.done->query()) return;
      inspect(oldest);
    }
    pending_.pop_front();
  }
}

std::optional<std::string> BadIndexRing::take_error() {
  std::optional<std::string> error;
  error.swap(first_error_);
  return error;
}

}  // namespace memloom::wholememory
