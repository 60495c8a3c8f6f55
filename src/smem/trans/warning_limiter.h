// A warning that a remote party can trigger at will (a refused connection, a failed proof) is
// logged at most once per interval, with the count of those left out: a flood of bad connections
// must not flood the log.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace memloom::smem::trans {

class WarningLimiter {
 public:
  explicit WarningLimiter(std::chrono::milliseconds interval = std::chrono::seconds(10))
      : interval_(interval) {}

  // True when this occurrence is to be logged; then *note says how many were left out before it
  // ("" when none).
  bool allow(std::string* note) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    if (logged_once_ && now - last_ < interval_) {
      ++suppressed_;
      return false;
    }
    *note = suppressed_ == 0 ? std::string()
                             : " (" + std::to_string(suppressed_) + " more like it not logged)";
    logged_once_ = true;
    last_ = now;
    suppressed_ = 0;
    return true;
  }

 private:
  const std::chrono::milliseconds interval_;
  std::mutex mutex_;
  bool logged_once_ = false;
  std::chrono::steady_clock::time_point last_{};
  uint64_t suppressed_ = 0;
};

}  // namespace memloom::smem::trans
