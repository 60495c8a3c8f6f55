// Orders the batches that a transport's serving threads answer side by side when they touch the
// same memory: a batch waits until no batch in progress overlaps it where either of them writes.
//
// Why: a requester that gives up on a write (interrupted, timed out) closes its connection, but
// the serving side goes on applying the part of the payload already in its socket buffer until it
// reaches the end of it. Served on another thread, the requester's next write (on a new
// connection) could complete first and then be overwritten by the stale bytes, so a later read
// saw the abandoned write's data. Waiting for the overlapping batch in progress makes a
// completed write the last to land. A span is the batch's lowest to highest address, which is
// cheap (one entry per batch, not per op) and only rarely orders batches that did not need it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>

#include "memloom/deadline.h"

namespace memloom::host {

class OverlappingBatches {
 private:
  struct Span {
    uint64_t begin, end;
    bool writes;
  };

 public:
  // Holds a batch's span until destroyed.
  class Hold {
   public:
    Hold(OverlappingBatches& owner, std::list<Span>::iterator span) : owner_(&owner), span_(span) {}
    Hold(Hold&& other) noexcept : owner_(other.owner_), span_(other.span_) {
      other.owner_ = nullptr;
    }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    Hold& operator=(Hold&&) = delete;
    ~Hold();

   private:
    OverlappingBatches* owner_;
    std::list<Span>::iterator span_;
  };

  // Waits until no held span overlaps [begin, end) where it or this one writes, then holds it;
  // nothing when the deadline passes first.
  std::optional<Hold> enter(uint64_t begin, uint64_t end, bool writes, Deadline deadline);

 private:
  std::mutex mutex_;
  std::condition_variable released_;
  std::list<Span> spans_;
};

}  // namespace memloom::host
