// Bootstrap: what a backend needs from the layer above to set up a group of processes.
// The core implements it over the config store (keys already namespaced per group) and its fd
// broker; the backend never talks to the store itself.
#pragma once

#include <string>

#include "memloom/deadline.h"

namespace memloom::hal {

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual void put(const std::string& key, const std::string& value) = 0;
  // Blocks until the key exists; throws kTimeout at the deadline.
  virtual std::string wait_get(const std::string& key, Deadline deadline) = 0;
  // Makes `fd` fetchable by other processes of this node; returns a token naming it. The broker
  // keeps its own duplicate until withdraw_fd(token).
  virtual std::string publish_fd(int fd) = 0;
  virtual void withdraw_fd(const std::string& token) = 0;
  // Returns a new descriptor for the file published under `token` by another process.
  virtual int fetch_fd(const std::string& token, Deadline deadline) = 0;
};

}  // namespace memloom::hal
