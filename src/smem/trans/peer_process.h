// The process of a same-node peer, watched through a pidfd (immune to pid reuse) where the kernel
// has them, else through kill(pid, 0).
#pragma once

#include <sys/types.h>

#include <string>

#include "src/base/unique_fd.h"

namespace memloom::smem::trans {

class PeerProcess {
 public:
  // Throws kCommunication if the process has exited already.
  PeerProcess(const std::string& peer_name, pid_t pid);
  pid_t pid() const { return pid_; }
  bool exited() const;

 private:
  pid_t pid_;
  base::UniqueFd pidfd_;
};

}  // namespace memloom::smem::trans
