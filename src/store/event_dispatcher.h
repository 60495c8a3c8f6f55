// Runs a client's watch callbacks on their own thread, in the order the events arrived. Kept off
// the I/O thread so that a callback which does call the client (against the advice in client.h)
// delays only other callbacks, never the replies its call waits for.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

#include "src/store/client.h"

namespace memloom::store {

class EventDispatcher : public std::enable_shared_from_this<EventDispatcher> {
 public:
  static std::shared_ptr<EventDispatcher> start();
  ~EventDispatcher();

  void add(WatchId id, WatchCallback callback);
  // After remove() returns, the callback does not run again; if it is running on another thread,
  // remove() waits for it to return (unless called from a callback, which cannot wait for itself).
  void remove(WatchId id);
  // Events for ids without a callback (already removed) are dropped.
  void push(WatchId id, WatchEvent event);
  // Stops the thread after the running callback, dropping queued events. Safe from a callback.
  void stop();

 private:
  EventDispatcher() = default;
  void loop();
  bool on_dispatch_thread() const { return std::this_thread::get_id() == thread_.get_id(); }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::pair<WatchId, WatchEvent>> queue_;
  std::unordered_map<WatchId, WatchCallback> callbacks_;
  WatchId running_ = 0;  // the id whose callback runs now, 0 if none
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace memloom::store
