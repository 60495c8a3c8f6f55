// Which job namespaces have clients connected, and the end of a job: when the last connection of
// a namespace has been gone for `grace`, its keys are removed, so a crashed job leaves nothing
// behind for the next job of the same name to trip over ("rank 0 ... was already taken"). The
// grace lets a later process of the same job (a second init, a helper process) find its keys.
//
// A namespace is also bound to the key of the connection that created it (protocol.h, kHello),
// for as long as it lives, grace included: its name is often guessable (a Slurm job id), so the
// key, not the name, is what tells a job's clients from another local user's. The first comer
// wins either way: a keyless namespace refuses keyed clients too, or an intruder who opened the
// job's namespace first without a key would receive every key the job writes. A namespace taken
// that way fails the job loudly at connect instead.
//
// Not thread-safe: the server's I/O thread owns it.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

namespace memloom::store {

class JobNamespaces {
 public:
  using End = std::function<void(const std::string& job_namespace)>;
  JobNamespaces(boost::asio::any_io_executor executor, std::chrono::milliseconds grace, End end)
      : executor_(std::move(executor)), grace_(grace), end_(std::move(end)) {}

  // Throws Error(kInvalidValue) when the namespace exists with another key (or none, or the
  // client has none); the connection has then not joined.
  void join(const std::string& job_namespace, const std::string& key);
  void leave(const std::string& job_namespace);
  // Cancels pending ends without running them (server shutdown).
  void clear() { namespaces_.clear(); }

 private:
  struct Entry {
    size_t connections = 0;
    std::string key;  // of the connection that created the namespace; "" for none
    std::unique_ptr<boost::asio::steady_timer> end_timer;  // set while no connection is left
  };
  boost::asio::any_io_executor executor_;
  std::chrono::milliseconds grace_;
  End end_;
  std::unordered_map<std::string, Entry> namespaces_;
};

}  // namespace memloom::store
