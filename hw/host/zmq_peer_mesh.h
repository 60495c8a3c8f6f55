// ZmqPeerMesh: the cross-node channel of a collective group. Every rank binds one ROUTER socket
// (on host_address(), ephemeral port, published through the bootstrap) and connects one DEALER to
// each rank on another node; a receiver thread drains the ROUTER into per-source mailboxes.
//
// Why every pair and not only node leaders: agreement and barriers do go leader to leader (the
// hierarchical part), but alltoallv data then travels straight from its source rank to its
// destination rank instead of being staged through both leaders and the bounded shared-memory
// chunks twice, and any rank that sees a failure can announce it to everybody at once. The
// emulator's groups are small (tens of ranks), so N^2 connections are cheap.
//
// Sends never block (no high-water mark) and the receiver thread always drains, so two ranks
// sending large streams to each other cannot deadlock. Each pair's messages arrive in order.
#pragma once

#include <zmq.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hw/hal/bootstrap.h"
#include "hw/host/byte_spans.h"
#include "memloom/deadline.h"

namespace memloom::host {

enum class MeshKind : uint32_t { kHeaders = 1, kData = 2, kAbort = 3 };

class ZmqPeerMesh {
 public:
  // Called on the receiver thread when a peer announces that the group failed.
  using AbortHandler = std::function<void(int source, const std::string& reason)>;
  // Called while a receive waits (at least every few ms); throws to end the wait.
  using HealthCheck = std::function<void()>;

  // Binds, publishes this rank's address under key_prefix + rank, and connects to every peer.
  ZmqPeerMesh(int rank, const std::vector<int>& peers, hal::Bootstrap& bootstrap,
              const std::string& key_prefix, Deadline deadline, AbortHandler on_abort);
  ~ZmqPeerMesh();
  ZmqPeerMesh(const ZmqPeerMesh&) = delete;
  ZmqPeerMesh& operator=(const ZmqPeerMesh&) = delete;

  const std::string& address() const { return address_; }

  void send(int peer, MeshKind kind, uint64_t seq, const void* data, size_t bytes);
  // Sends the concatenation of `segments` as a series of kData messages.
  void send_stream(int peer, uint64_t seq, const std::vector<ConstByteSpan>& segments);
  // Returns the payload of the next message from `peer`, which must be (kind, seq).
  std::string receive(int peer, MeshKind kind, uint64_t seq, Deadline deadline,
                      const HealthCheck& check);
  // Receives what the peer's send_stream sent into `segments` (same total on both sides).
  void receive_stream(int peer, uint64_t seq, const std::vector<ByteSpan>& segments,
                      Deadline deadline, const HealthCheck& check);

  // Tells every peer that the group failed (best effort, never blocks) and stops lingering on
  // unsent data at close.
  void send_abort(const std::string& reason);
  // Wakes waiting receives so they run their health check now.
  void interrupt();
  // At close, gives unsent messages only a moment (the group failed; peers may be gone).
  void drop_unsent_at_close() { quick_close_ = true; }

 private:
  struct Message {
    MeshKind kind;
    uint64_t seq;
    zmq::message_t payload;
  };
  void receive_loop();
  Message take(int peer, Deadline deadline, const HealthCheck& check);
  void send_message(int peer, MeshKind kind, uint64_t seq, const void* data, size_t bytes);

  int rank_;
  AbortHandler on_abort_;
  zmq::context_t context_;
  zmq::socket_t router_;
  std::string address_;
  std::mutex send_mutex_;  // DEALER sockets: used by the caller and by abort() callers
  std::map<int, zmq::socket_t> dealers_;
  std::atomic<bool> quick_close_{false};

  std::mutex mailbox_mutex_;
  std::condition_variable mailbox_cv_;
  std::map<int, std::deque<Message>> mailboxes_;
  uint64_t interrupts_ = 0;

  std::atomic<bool> stopping_{false};
  std::thread receiver_;
};

}  // namespace memloom::host
