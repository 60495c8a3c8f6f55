// Collective building blocks shared by WholeMemory, SHM and BM: exchanging memory segments among
// the ranks of a node, and agreeing on one virtual address range that is free in every process.
#pragma once

#include <memory>
#include <vector>

#include "hw/hal/memory_domain.h"
#include "memloom/deadline.h"
#include "src/core/group.h"

namespace memloom::core {

// The segments of one collective allocation: every rank contributed sizes[r] bytes (possibly 0);
// segments[r] is set for my own rank and every same-node rank with a non-zero size, null for
// ranks on other nodes.
struct SegmentSet {
  std::vector<size_t> sizes;
  std::vector<std::unique_ptr<hal::Segment>> segments;
};

// Collective over `group`: allocates `my_size` bytes (a multiple of the domain's granularity; 0
// allowed) of `kind` on `device` (ignored for host memory), shares them with the same-node ranks
// through fds (FdBroker) and imports theirs. Any rank's allocation failure fails every rank (the
// failing rank with its own error, the others with kCommunication naming it) and frees what was
// allocated.
SegmentSet exchange_segments(Group& group, hal::MemoryKind kind, int device, size_t my_size,
                             Deadline deadline);

// Collective over `group`: reserves `size` bytes of address space at the same base address in
// every process of the group (retrying with other candidates when one process has that range
// taken). `kind` is the kind of memory the range will hold. Throws kNotSupported if no common range
// is found.
std::unique_ptr<hal::VaRange> reserve_common_range(Group& group, hal::MemoryKind kind, size_t size,
                                                   Deadline deadline);

// Rounds up to a multiple of `granularity` (a power of two or not).
inline size_t round_up(size_t value, size_t granularity) {
  return granularity == 0 ? value : (value + granularity - 1) / granularity * granularity;
}

}  // namespace memloom::core
