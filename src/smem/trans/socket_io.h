// Non-blocking socket plumbing for the TRANS data path: every wait is bounded by a Deadline and
// can be interrupted by a stop descriptor, so no thread of the engine blocks forever.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "memloom/deadline.h"
#include "src/base/fd_wait.h"
#include "src/base/unique_fd.h"
#include "src/smem/trans/endpoint_address.h"

namespace memloom::smem::trans {

using base::UniqueFd;

// Waits for `events` on fd, or for stop_fd (-1: none) to become readable, until the deadline.
using base::wait_for;
using base::WaitResult;

// A listening, non-blocking TCP socket bound to exactly `address`. Throws kInvalidInput when the
// address is not one of this host's, kInvalidValue when another socket already holds it.
UniqueFd listen_on(const EndpointAddress& address);

// Prepares a data connection (both ends): TCP_NODELAY, and a congestion control that does not pace.
// A batch is one burst of megabytes on a connection that was idle a moment before; BBR, the
// default of some kernels, paces such a burst with its own timer (without an fq qdisc) at a rate
// learnt from the earlier small exchanges, which made a 1024 x 4 KiB batch over loopback twice as
// slow as the same bytes sent at the window's pace. So a connection that starts with a "bbr*"
// algorithm switches to cubic, else reno (always permitted). MEMLOOM_TRANS_TCP_CONGESTION names
// the algorithm to use instead ("default": keep the system's).
void tune_data_socket(int fd);

// A connected, non-blocking TCP socket (tune_data_socket). Throws kCommunication when nothing
// listens there, kTimeout at the deadline.
UniqueFd connect_to(const EndpointAddress& address, Deadline deadline);

// Sends/receives exactly `bytes` on a non-blocking socket. Throw kCommunication when the peer
// closes or resets, kTimeout at the deadline; return false only when stop_fd fired.
bool send_exact(int fd, const void* data, size_t bytes, Deadline deadline, int stop_fd = -1);
bool recv_exact(int fd, void* data, size_t bytes, Deadline deadline, int stop_fd = -1);

// A position in a list of iovecs, consumed by sendmsg/recvmsg calls of at most IOV_MAX entries.
class IovCursor {
 public:
  explicit IovCursor(std::vector<iovec> iovs);
  bool done() const { return index_ == iovs_.size(); }
  size_t remaining_bytes() const { return remaining_; }
  // The next entries to pass to one sendmsg/recvmsg call (the first one already advanced).
  iovec* next(size_t* count);
  void advance(size_t bytes);

 private:
  std::vector<iovec> iovs_;
  size_t index_ = 0;
  size_t remaining_ = 0;
};

// One non-blocking sendmsg/recvmsg over the cursor. Returns the bytes moved (0 if the socket had
// no room/data); throws kCommunication if the connection closed or failed.
size_t send_some(int fd, IovCursor& cursor);
size_t recv_some(int fd, IovCursor& cursor);

}  // namespace memloom::smem::trans
