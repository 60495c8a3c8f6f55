// Which job namespaces have clients connected, and the end of a job: when the last connection of
// a namespace has been gone for `grace`, its keys are removed, so a crashed job leaves nothing
// behind for the next job of the same name to trip over ("rank 0 ... was already taken"). The
// grace lets a later process of the same job (a second init, a helper process) find its keys.
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

  void join(const std::string& job_namespace);
  void leave(const std::string& job_namespace);
  // Cancels pending ends without running them (server shutdown).
  void clear() { namespaces_.clear(); }

 private:
  struct Entry {
    size_t connections = 0;
    std::unique_ptr<boost::asio::steady_timer> end_timer;  // set while no connection is left
  };
  boost::asio::any_io_executor executor_;
  std::chrono::milliseconds grace_;
  End end_;
  std::unordered_map<std::string, Entry> namespaces_;
};

}  // namespace memloom::store
