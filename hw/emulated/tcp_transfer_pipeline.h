// The requesting end of the emulated Transport: turns a list of ops into batches (small ops
// coalesced, large ops cut into pieces) and runs them over one connection with several batches
// in flight, sending and receiving at the same time so neither side's socket buffer can stall
// the other.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hw/hal/transport.h"
#include "memloom/deadline.h"

namespace memloom::emulated {

struct TransferBatch {
  std::vector<std::byte> head;  // RequestHeader + OpDescriptors
  std::vector<iovec> send;      // head, then the write payloads
  std::vector<iovec> receive;   // destinations of the read payloads
  uint64_t id = 0;
  uint64_t read_bytes = 0;
};

// Checks the ops (kInvalidInput on a null buffer or a wrapping range) and plans the batches.
std::vector<TransferBatch> plan_transfer(const std::vector<hal::TransferOp>& ops);

// Runs the batches over the connected, non-blocking socket `fd`. Throws kInvalidInput when the
// peer refused a batch (after draining every answer in flight, so the connection stays usable),
// kCommunication when the connection fails, kTimeout at the deadline, kInterrupted when the
// caller's interrupt check says so (after the last two the connection is in an unknown state and
// must be dropped).
void run_transfer(int fd, std::vector<TransferBatch>& batches, const std::string& peer,
                  Deadline deadline);

}  // namespace memloom::emulated
