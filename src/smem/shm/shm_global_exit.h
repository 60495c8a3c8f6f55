// smem_shm_global_exit: one rank publishes an exit status under a store key; every rank that
// registered an exit function sees the key change and runs the function with that status, on a
// thread of its own (never on the store client's event thread, which the function may tear down).
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "src/store/client.h"

namespace memloom::smem {

class ShmGlobalExit {
 public:
  ShmGlobalExit(std::shared_ptr<store::Client> client, std::string key);
  ~ShmGlobalExit();
  ShmGlobalExit(const ShmGlobalExit&) = delete;
  ShmGlobalExit& operator=(const ShmGlobalExit&) = delete;

  // Replaces the exit function; starts watching the key on first use.
  void register_handler(void (*handler)(int));
  // Publishes `status` to every rank and runs this rank's function (if any) before returning.
  void trigger(int status);

 private:
  void deliver(int status);  // from the watch: wakes the runner
  void run_loop();           // the runner thread: waits for a status, runs the handler once

  std::shared_ptr<store::Client> client_;
  std::string key_;
  std::mutex mutex_;
  std::condition_variable wake_;
  void (*handler_)(int) = nullptr;
  bool fired_ = false;
  bool stopping_ = false;
  std::optional<int> pending_;
  std::optional<store::WatchId> watch_;
  std::thread runner_;
};

}  // namespace memloom::smem
