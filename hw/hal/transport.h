// Transport: reads and writes of registered memory of a process on another node. Each process
// runs one endpoint; peers name it by the address it publishes through the store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "memloom/deadline.h"

namespace memloom::hal {

struct TransferOp {
  enum class Direction : uint8_t { kRead, kWrite };
  Direction direction;
  uint64_t remote_address;  // an address inside memory the peer exposed
  void* local_address;      // source for writes, destination for reads
  size_t bytes;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // The address peers connect to ("tcp://IP:PORT").
  virtual std::string address() const = 0;
  // Allows peers to read/write [address, address+size). Requests outside exposed ranges are
  // refused by this endpoint with kInvalidInput on the requesting side.
  virtual void expose(void* address, size_t size) = 0;
  virtual void withdraw(void* address) = 0;
  // Runs all ops against one peer, in order, returning when every op has completed. Small ops are
  // coalesced and large ones pipelined. Throws kCommunication if the peer is gone.
  virtual void transfer(const std::string& peer_address, const std::vector<TransferOp>& ops,
                        Deadline deadline) = 0;
};

}  // namespace memloom::hal
