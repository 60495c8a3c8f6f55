// The serving end of the TCP Transport: one listening socket, one poll thread that accepts
// connections and watches them, and up to kServeThreads serving threads that answer the batches
// (see tcp_wire.h) against the memory this process exposed. A connection with a request waiting
// leaves the poll set for a serving thread and comes back once its batch is answered, so batches
// of one connection run in order, and a peer that stalls in the middle of a batch holds only the
// thread serving it (until kStallTimeout drops it), not the other peers. Exposed memory the CPU
// cannot touch is moved through a host buffer per serving thread, a piece at a time.
//
// A connection is served only once its requester proved it knows the job secret (job_proof.h).
// Until then it waits in the poll loop without blocking it: each must prove within kProofTimeout
// of its accept, and at most kMaxUnproven wait at once (a new one evicts the oldest), so an
// outsider's silent connections neither hold a thread nor keep ranks out.
#pragma once

#include <poll.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "hw/hal/transport.h"
#include "hw/host/buffer_staging.h"
#include "hw/host/job_proof.h"
#include "hw/host/overlapping_batches.h"
#include "hw/host/tcp_wire.h"

namespace memloom::host {

class TcpTransportServer {
 public:
  // Binds to the options' host (else host_address()) on an ephemeral port and starts serving,
  // to requesters that prove the options' job secret. `staging` (may be null: all memory is host
  // memory) must outlive the server.
  TcpTransportServer(BufferStaging* staging, const hal::TransportOptions& options);
  ~TcpTransportServer();
  TcpTransportServer(const TcpTransportServer&) = delete;
  TcpTransportServer& operator=(const TcpTransportServer&) = delete;

  const std::string& address() const { return address_; }
  // Exposed ranges may not overlap; withdraw takes the start of an exposed range and waits for
  // a batch in progress to finish.
  void expose(void* address, size_t size);
  void withdraw(void* address);

 private:
  // A connection that has not yet proven it belongs to the job.
  struct Unproven {
    int fd;
    std::chrono::steady_clock::time_point deadline;
    Nonce nonce;              // sent in the ServerHello
    wire::RequesterProof in;  // `have` bytes of it have arrived
    size_t have = 0;
  };
  // The poll thread's loop.
  void serve();
  // A serving thread's loop: answers the connections serve() hands it until the server stops.
  void serve_batches();
  // Whether `connection`, just answered, has its next request within kLinger (and no other
  // connection waits for a serving thread): then the same thread answers it.
  bool next_request_comes_soon(int connection);
  // Hands a connection with a request waiting to a serving thread, starting one if none is idle.
  void hand_to_serving_thread(int connection);
  // Wakes serve() (to stop, or to poll a connection handed back).
  void wake_poll_thread();
  void admit(int connection);
  // Reads what `unproven` sent; true when it is done with (closed, or proven and moved to
  // `served`).
  bool hear_proof(Unproven& unproven, std::vector<pollfd>& served);
  struct ExposedRange {
    size_t size;
    bool staged;  // device memory: moved through a serving thread's staging buffer
  };
  // Answers one batch; false: drop the connection. `staging_buffer` is the serving thread's.
  bool answer(int connection, StagingBuffer& staging_buffer);
  // "" when exposed; `staged` then says whether the range is device memory.
  std::string check_range(uint64_t address, uint64_t bytes, bool* staged) const;
  // Moves the payloads of ops[begin, end), staged ops of one direction, through the staging
  // buffer: ops that fit in it together with one copy_all, a single larger op a buffer at a time.
  // A run of writes reaches device memory before anything after it runs.
  bool move_staged(int connection, const std::vector<wire::OpDescriptor>& ops, size_t begin,
                   size_t end, StagingBuffer& staging_buffer, Deadline stall);

  const hal::JobSecret secret_;
  std::deque<Unproven> unproven_;  // oldest first: deadlines ascend
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  std::string address_;
  mutable std::shared_mutex ranges_mutex_;
  std::map<uintptr_t, ExposedRange> ranges_;  // by start
  BufferStaging* const staging_;
  OverlappingBatches overlapping_;  // batches being answered, by the memory they touch

  // Between the poll thread and the serving threads.
  std::mutex work_mutex_;
  std::condition_variable work_ready_;
  bool stopping_ = false;
  std::deque<int> requests_waiting_;  // connections with a request, for a serving thread
  std::vector<int> handed_back_;      // answered, for the poll thread to watch again
  std::set<int> in_service_;          // being answered: shut down when the server stops
  size_t idle_serving_threads_ = 0;
  std::vector<std::thread> serving_threads_;

  std::thread poll_thread_;
};

}  // namespace memloom::host
