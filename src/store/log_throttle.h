// A log line that may repeat at machine speed (accept failures, refused connections) is written at
// most once per interval, with the count of those suppressed since, so a flood of events cannot
// flood the log (EMFILE once produced millions of lines a minute).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace memloom::store {

class LogThrottle {
 public:
  using Clock = std::chrono::steady_clock;
  explicit LogThrottle(std::chrono::milliseconds interval) : interval_(interval) {}

  // True when this event should be logged now; *suffix then tells how many were suppressed.
  bool admit(std::string* suffix, Clock::time_point now = Clock::now()) {
    if (logged_once_ && now - last_ < interval_) {
      ++suppressed_;
      return false;
    }
    *suffix = suppressed_ == 0 ? std::string()
                               : " (" + std::to_string(suppressed_) +
                                     " more like it in the last interval were not logged)";
    suppressed_ = 0;
    last_ = now;
    logged_once_ = true;
    return true;
  }

 private:
  std::chrono::milliseconds interval_;
  Clock::time_point last_{};
  size_t suppressed_ = 0;
  bool logged_once_ = false;
};

}  // namespace memloom::store
