// How a kernel's "index past the table" reaches the host without stalling the stream. Each
// operation takes a slot of a ring: a device word the kernel records the bad index in, zeroed
// before the kernel and copied back to a registered host word after it, both in stream order, and
// an event that says when the host word is valid. The host looks at finished slots when the next
// operation takes a slot (logging what it finds at once) and at every synchronize through memloom
// (raising the first error found since the last one).
//
// The ring replaces a host function per operation: on an H200 a host function costs ~18 us of
// stream time (measured), 6% of a 1M-row gather that otherwise takes ~280 us.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "hw/hal/memory_domain.h"
#include "hw/hal/stream.h"
#include "memloom/deadline.h"

namespace memloom::wholememory {

class BadIndexRing {
 public:
  static constexpr size_t kSlots = 64;

  explicit BadIndexRing(int device);
  // The stream must have drained (OpStream's destructor does that first).
  ~BadIndexRing();
  BadIndexRing(const BadIndexRing&) = delete;
  BadIndexRing& operator=(const BadIndexRing&) = delete;

  // Takes the next slot for `operation` (a table of `bound` rows) on `stream`, whose enqueue the
  // caller serialises: enqueues the zeroing of its device word and returns that word. When every
  // slot is in flight, waits (until `deadline`) for the oldest.
  unsigned long long* begin(hal::Stream& stream, const char* operation, int64_t bound,
                            Deadline deadline);
  // After the kernel that wrote the word: enqueues its read-back and the slot's event.
  void end(hal::Stream& stream);

  // Looks at slots whose event has completed (with `all_complete`, the caller has synchronized the
  // stream: every slot). Each bad index found is logged; the first message since the last call
  // of take_error() is kept.
  void collect(bool all_complete);
  // The kept message, cleared (nullopt when every operation was clean).
  std::optional<std::string> take_error();

 private:
  struct Pending {
    size_t slot;
    const char* operation;
    int64_t bound;
    std::unique_ptr<hal::Event> done;  // null until end()
  };
  void inspect(const Pending& pending);

  std::unique_ptr<hal::Segment> segment_;
  unsigned long long* device_words_ = nullptr;
  unsigned long long* host_words_ = nullptr;  // kSlots results, then one zero
  size_t host_bytes_ = 0;
  size_t next_slot_ = 0;
  std::deque<Pending> pending_;
  std::optional<std::string> first_error_;
};

}  // namespace memloom::wholememory
