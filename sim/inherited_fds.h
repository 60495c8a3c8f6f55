// Descriptors and ranks. What memloom-run received from its parent beyond stdin/stdout/stderr
// (a make jobserver, a pipe the caller set up) is passed on to every rank, as a shell would.
// What it opened itself (the embedded store's sockets, other ranks' pipes) must not leak into
// the ranks, even where a library forgot O_CLOEXEC (Asio's acceptor does): the rank would hold
// the store's port, or keep another rank's pipe open after that rank ended.
#pragma once

#include <vector>

namespace memloom::sim {

struct FdRange {
  unsigned first = 0;
  unsigned last = 0;  // inclusive
  bool operator==(const FdRange&) const = default;
};

// The descriptors above 2 that are open now, sorted. Call it before opening anything.
std::vector<int> open_fds_above_stderr();

// The ranges of descriptors above 2 that are not in `inherited` (sorted): everything a rank
// must not receive. The last range ends at the largest possible descriptor.
std::vector<FdRange> fds_not_inherited(const std::vector<int>& inherited);

// Marks every descriptor in `ranges` close-on-exec. Async-signal-safe: runs in a forked child.
// max_fd (< UINT_MAX) bounds the one-by-one fallback for kernels without close_range.
void mark_close_on_exec(const std::vector<FdRange>& ranges, unsigned max_fd) noexcept;

}  // namespace memloom::sim
