// Keeps an allocation's memory mapped while operations use it. Every entry point that reaches an
// allocation's memory (gather, scatter, queries, file I/O) holds a Lease for its duration, and
// records the stream work it enqueued (a gather reads the table when its stream runs, after the
// call returned). wholememory_free and wholememory_finalize close the gate: new operations are
// refused, then close() waits for the leases and the recorded work before the memory is unmapped.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hw/hal/stream.h"
#include "memloom/deadline.h"

namespace memloom::wholememory {

class OperationGate {
 public:
  // Held by one operation; returned when it goes. Whoever holds a Lease also holds a reference to
  // the allocation, and close() keeps one until the leases are back, so the gate outlives them.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();

   private:
    friend class OperationGate;
    explicit Lease(OperationGate* gate) : gate_(gate) {}
    void release() noexcept;
    OperationGate* gate_ = nullptr;
  };

  OperationGate() = default;
  OperationGate(const OperationGate&) = delete;
  OperationGate& operator=(const OperationGate&) = delete;

  // kInvalidInput once close() has begun: the allocation is being freed.
  Lease enter();

  // Records that an operation under a lease enqueued work on `stream`, for close() to wait for.
  // Streams run in order, so only the newest event of each stream is kept; recording under the
  // gate's lock keeps "newest" true when threads share a stream.
  void track(hal::Stream& stream);

  // Refuses new leases, then waits until every lease is returned and the tracked work completed.
  // False when the deadline passed first: something may still read or write the memory, so the
  // caller must keep it mapped.
  bool close(Deadline deadline);

 private:
  struct Pending {
    const hal::Stream* stream;
    std::unique_ptr<hal::Event> done;
  };
  void release_one() noexcept;

  std::mutex mutex_;
  std::condition_variable returned_;
  bool closed_ = false;
  int held_ = 0;
  std::vector<Pending> pending_;
};

}  // namespace memloom::wholememory
