// The requesting end of the TCP Transport: turns a list of ops into batches (small ops coalesced,
// large ops cut into pieces) and runs them over one connection with several batches in flight,
// sending and receiving at the same time so neither side's socket buffer can stall the other.
// Pieces of memory the CPU cannot touch (device memory) travel through a host buffer per batch in
// flight: a batch's device writes are copied out just before it is sent, its device reads copied
// in as soon as its answer has arrived, while the other batches in flight keep the wire busy.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hw/hal/transport.h"
#include "hw/host/buffer_staging.h"
#include "memloom/deadline.h"

namespace memloom::host {

// A piece of a batch in memory the CPU cannot touch; its iovec points into the batch's staging
// buffer once the batch is under way.
struct StagedPiece {
  std::byte* memory;
  size_t buffer_offset;  // where it lies in the staging buffer
  size_t bytes;
  bool write;
  size_t iov;  // its entry in send (write) or receive (read)
};

struct TransferBatch {
  std::vector<std::byte> head;      // RequestHeader + OpDescriptors
  std::vector<iovec> send;          // head, then the write payloads
  std::vector<iovec> receive;       // destinations of the read payloads
  std::vector<StagedPiece> staged;  // pieces of send/receive that go through a staging buffer
  uint64_t id = 0;
  uint64_t read_bytes = 0;
};

// The host buffers a connection stages device memory through, one per batch in flight, allocated
// when a transfer first needs them. Without a staging every op is host memory.
struct StagingBuffers {
  BufferStaging* staging = nullptr;
  std::vector<StagingBuffer> buffers;
};

// Checks the ops (kInvalidInput on a null buffer or a wrapping range) and plans the batches; ops
// whose local memory `staging` says needs staging are marked so (staging may be null).
std::vector<TransferBatch> plan_transfer(const std::vector<hal::TransferOp>& ops,
                                         const BufferStaging* staging);

// Runs the batches over the connected, non-blocking socket `fd`. Throws kInvalidInput when the
// peer refused a batch (after draining every answer in flight, so the connection stays usable),
// kCommunication when the connection fails, kTimeout at the deadline, kInterrupted when the
// caller's interrupt check says so (after the last two the connection is in an unknown state and
// must be dropped).
void run_transfer(int fd, std::vector<TransferBatch>& batches, StagingBuffers& staging,
                  const std::string& peer, Deadline deadline);

}  // namespace memloom::host
