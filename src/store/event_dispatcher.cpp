#include "src/store/event_dispatcher.h"

#include "src/base/log.h"

namespace memloom::store {

std::shared_ptr<EventDispatcher> EventDispatcher::start() {
  std::shared_ptr<EventDispatcher> dispatcher(new EventDispatcher());
  // The thread keeps the dispatcher alive, so stop() from a callback can detach it safely.
  dispatcher->thread_ = std::thread([self = dispatcher] { self->loop(); });
  return dispatcher;
}

EventDispatcher::~EventDispatcher() {
  if (thread_.joinable()) thread_.detach();  // only reached from the thread's own last reference
}

void EventDispatcher::add(WatchId id, WatchCallback callback) {
  std::lock_guard<std::mutex> lock(mutex_);
  callbacks_[id] = std::move(callback);
}

void EventDispatcher::remove(WatchId id) {
  std::unique_lock<std::mutex> lock(mutex_);
  callbacks_.erase(id);
  if (on_dispatch_thread()) return;
  changed_.wait(lock, [&] { return running_ != id; });
}

void EventDispatcher::push(WatchId id, WatchEvent event) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_ || callbacks_.count(id) == 0) return;
  queue_.emplace_back(id, std::move(event));
  changed_.notify_all();
}

void EventDispatcher::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
    queue_.clear();
    changed_.notify_all();
  }
  if (on_dispatch_thread()) {
    thread_.detach();  // the loop ends when the current callback returns
  } else if (thread_.joinable()) {
    thread_.join();
  }
}

void EventDispatcher::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) break;
    auto [id, event] = std::move(queue_.front());
    queue_.pop_front();
    auto found = callbacks_.find(id);
    if (found == callbacks_.end()) continue;
    WatchCallback callback = found->second;
    running_ = id;
    lock.unlock();
    try {
      callback(event);
    } catch (const std::exception& error) {
      MEMLOOM_LOG(kError, "store watch callback " << id << " threw: " << error.what());
    } catch (...) {
      MEMLOOM_LOG(kError, "store watch callback " << id << " threw a non-standard exception");
    }
    callback = nullptr;  // release what it captured before remove() waiters proceed
    lock.lock();
    running_ = 0;
    changed_.notify_all();
  }
}

}  // namespace memloom::store
