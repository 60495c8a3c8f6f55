// Transport: reads and writes of registered memory of a process on another node. Each process
// runs one endpoint; peers name it by the address it publishes through the store. Both backends
// implement it on UCX (hw/host/ucx_transport.h), which picks RDMA, shared memory or TCP.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "memloom/deadline.h"

namespace memloom::hal {

// What the ranks of one job share and outsiders do not (the job's config store hands it out).
inline constexpr size_t kJobSecretBytes = 32;
using JobSecret = std::array<uint8_t, kJobSecretBytes>;

struct TransportOptions {
  // Both ends of a connection prove they know it (HMAC-SHA256 over fresh nonces of both sides)
  // before any request is served: an endpoint serves only ranks of its job, and a requester talks
  // only to one. Left all zero, anyone who speaks the protocol can prove it: only for tests of the
  // transport itself; BM and TRANS pass their job's.
  JobSecret job_secret{};
  // The IP literal the endpoint binds to and advertises ("": MEMLOOM_HOST_ADDR, else 127.0.0.1).
  std::string host;
};

// What this process's transport finds, for memloom-info and MemFabric's data-operation queries.
struct TransportSupport {
  std::string ucx_version;       // the UCX library's own version
  bool ucx_rdma = false;         // UCX offers an RDMA transport (rc, dc or ud) here
  bool ucx_cuda_memory = false;  // UCX registers and moves CUDA memory itself
  // How the UCX transport moves this process's transfers ("am" or "rma": MEMLOOM_UCX_DATA_PATH),
  // or why MEMLOOM_UCX_DATA_PATH names none.
  std::string ucx_data_path;
  std::vector<std::string> ucx_resources;  // UCX's "transport/device" pairs, as UCX lists them
  std::string ucx_error;                   // UCX could not be asked (the fields above are empty)
};

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
  // The address peers connect to ("ucx://IP:PORT").
  virtual std::string address() const = 0;
  // Allows peers to read/write [address, address+size). Requests outside exposed ranges are
  // refused by this endpoint with kInvalidInput on the requesting side.
  virtual void expose(void* address, size_t size) = 0;
  virtual void withdraw(void* address) = 0;
  // Runs all ops against one peer, in order, returning when every op has completed. Small ops are
  // coalesced and large ones pipelined. Throws kCommunication if the peer is gone or does not
  // prove it knows this endpoint's job secret (or refuses this endpoint's proof).
  virtual void transfer(const std::string& peer_address, const std::vector<TransferOp>& ops,
                        Deadline deadline) = 0;
};

}  // namespace memloom::hal
