#include "src/smem/shm/shm_global_exit.h"

#include <chrono>
#include <cstdlib>

#include "src/base/log.h"

namespace memloom::smem {

ShmGlobalExit::ShmGlobalExit(std::shared_ptr<store::Client> client, std::string key)
    : client_(std::move(client)), key_(std::move(key)) {}

ShmGlobalExit::~ShmGlobalExit() {
  if (watch_) {
    try {
      client_->unwatch(*watch_);
    } catch (const std::exception& error) {
      MEMLOOM_LOG(kWarn, "smem_shm: dropping the global exit watch failed: " << error.what());
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (runner_.joinable()) {
    // The handler itself may destroy the object (smem_shm_destroy / uninit from inside it).
    if (runner_.get_id() == std::this_thread::get_id()) {
      runner_.detach();
    } else {
      runner_.join();
    }
  }
}

void ShmGlobalExit::register_handler(void (*handler)(int)) {
  std::unique_lock<std::mutex> lock(mutex_);
  handler_ = handler;
  if (watch_) return;
  runner_ = std::thread([this] { run_loop(); });
  lock.unlock();
  watch_ = client_->watch_key(key_, [this](const store::WatchEvent& event) {
    if (event.kind != store::WatchEventKind::kChanged) return;
    deliver(std::atoi(event.value.c_str()));
  });
  // A rank may have exited before this one registered: the key is already there.
  if (auto value = client_->get(key_, std::chrono::milliseconds(0)))
    deliver(std::atoi(value->c_str()));
}

void ShmGlobalExit::trigger(int status) {
  void (*handler)(int) = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!fired_) handler = handler_;
    fired_ = fired_ || handler != nullptr;
  }
  client_->set(key_, std::to_string(status));
  if (handler != nullptr) handler(status);
}

void ShmGlobalExit::deliver(int status) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (fired_ || pending_) return;
    pending_ = status;
  }
  wake_.notify_all();
}

void ShmGlobalExit::run_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  wake_.wait(lock, [this] { return stopping_ || pending_.has_value(); });
  if (stopping_ || fired_ || handler_ == nullptr) return;
  fired_ = true;
  int status = *pending_;
  void (*handler)(int) = handler_;
  lock.unlock();
  MEMLOOM_LOG(kInfo, "smem_shm: global exit with status " << status);
  handler(status);
}

}  // namespace memloom::smem
