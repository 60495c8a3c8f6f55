#include "src/wholememory/operation_gate.h"

#include <algorithm>
#include <utility>

#include "memloom/error.h"

namespace memloom::wholememory {

OperationGate::Lease::Lease(Lease&& other) noexcept : gate_(std::exchange(other.gate_, nullptr)) {}

OperationGate::Lease& OperationGate::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    release();
    gate_ = std::exchange(other.gate_, nullptr);
  }
  return *this;
}

OperationGate::Lease::~Lease() {
  release();
}

void OperationGate::Lease::release() noexcept {
  if (gate_ != nullptr) std::exchange(gate_, nullptr)->release_one();
}

OperationGate::Lease OperationGate::enter() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) {
    raise(Status::kInvalidInput,
          "the WholeMemory allocation is being freed (wholememory_free or wholememory_finalize)");
  }
  ++held_;
  return Lease(this);
}

void OperationGate::release_one() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  if (--held_ == 0) returned_.notify_all();
}

void OperationGate::track(hal::Stream& stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto done = stream.record();
  // Pruned here, so a table used from many streams keeps a short list.
  std::erase_if(pending_, [&](const Pending& entry) {
    return entry.stream == &stream || entry.done->query();
  });
  pending_.push_back({&stream, std::move(done)});
}

bool OperationGate::close(Deadline deadline) {
  std::vector<Pending> pending;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    closed_ = true;
    if (!returned_.wait_until(lock, deadline.time_point(), [&] { return held_ == 0; })) {
      return false;
    }
    // No lease is held and none can be taken: nothing is added to the list any more.
    pending.swap(pending_);
  }
  for (const Pending& entry : pending) {
    try {
      entry.done->synchronize(deadline);
    } catch (const std::exception&) {
      return false;  // late, or the stream failed: either way the work is not known to be over
    }
  }
  return true;
}

}  // namespace memloom::wholememory
