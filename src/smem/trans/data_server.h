// The data server of a TRANS instance: accepts initiators on the instance's uniqueId address, lets
// in those that prove they belong to the job (hello_gate.h, served by the acceptor thread), and
// serves their read/write frames (wire_format.h) against the instance's RegionTable, one thread
// per authenticated connection, at most max_connections of them. It exists beside the HAL Transport
// because a TRANS instance must listen on the exact address its uniqueId names, and it must check
// every request against the live registry (hal::Transport binds an address of its own choosing and
// exposes ranges without roles).
#pragma once

#include <atomic>
#include <chrono>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/smem/trans/hello_gate.h"
#include "src/smem/trans/job_auth.h"
#include "src/smem/trans/region_table.h"
#include "src/smem/trans/socket_io.h"
#include "src/smem/trans/staged_copies.h"
#include "src/smem/trans/wire_format.h"

namespace memloom::smem::trans {

struct ServerIdentity {
  std::string unique_id;
  std::string incarnation;     // changes every time an instance of this uniqueId starts
  bool serves_memory = false;  // RECEIVER or BOTH
  JobSecret secret{};          // what members prove they know (job_auth.h)
};

struct ServerLimits {
  HelloLimits hello;
  // Authenticated connections, each with its thread; beyond it a new connection is refused.
  size_t max_connections = 256;
};

class DataServer {
 public:
  // Serves on `listener` (from listen_on) until stop() or destruction. A connection that stays
  // silent for io_timeout in the middle of a frame is dropped. With `staging`, registered
  // memory is reached through stream copies of its streams (staged_copies.h).
  DataServer(UniqueFd listener, ServerIdentity identity, RegionTable& regions,
             std::chrono::milliseconds io_timeout, std::shared_ptr<StreamPool> staging = nullptr,
             ServerLimits limits = {});
  ~DataServer();
  DataServer(const DataServer&) = delete;
  DataServer& operator=(const DataServer&) = delete;
  // Closes the listener and every connection, and joins the threads.
  void stop();

 private:
  struct Connection {
    UniqueFd fd;
    std::thread thread;
    std::atomic<bool> finished{false};
  };

  // Per connection, for staged frames.
  struct Staging {
    std::vector<char> buffer;
  };

  void accept_loop();
  // Accepts what the listener holds into the gate; false when accept must pause (no descriptors).
  bool accept_pending(HelloGate& gate);
  // Starts serving an authenticated connection, or refuses it (cap, no thread) and logs.
  void start_serving(UniqueFd fd);
  // Reaps finished connections; returns how many still run.
  size_t reap_finished();
  void serve(Connection& connection);
  // Handles one read or write frame; returns false when the connection must close.
  bool serve_transfer(int fd, const wire::FrameHeader& header, Staging& staging);
  bool move_direct(int fd, const wire::FrameHeader& header,
                   const std::vector<wire::OpDescriptor>& ops,
                   const std::vector<const RegionRef*>& held);
  bool move_staged(int fd, const wire::FrameHeader& header,
                   const std::vector<wire::OpDescriptor>& ops,
                   const std::vector<const RegionRef*>& held, Staging& staging);
  std::string deregistered_message() const;
  void reply(int fd, const wire::FrameHeader& header, int32_t status, const std::string& payload);
  void drain(int fd, uint64_t bytes);
  Deadline io_deadline() const { return Deadline::after(io_timeout_); }

  UniqueFd listener_;
  UniqueFd stop_fd_;  // an eventfd: readable once stop() began
  ServerIdentity identity_;
  RegionTable& regions_;
  std::chrono::milliseconds io_timeout_;
  std::shared_ptr<StreamPool> staging_;
  const ServerLimits limits_;
  WarningLimiter refusal_warnings_;
  WarningLimiter accept_warnings_;
  std::thread acceptor_;
  std::mutex mutex_;
  std::list<std::unique_ptr<Connection>> connections_;
  bool stopped_ = false;
};

}  // namespace memloom::smem::trans
