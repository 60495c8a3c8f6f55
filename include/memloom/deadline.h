// Every wait in memloom is bounded: functions that may block take a Deadline.
#pragma once

#include <chrono>
#include <cstdint>

namespace memloom {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  static Deadline after(std::chrono::milliseconds timeout) {
    return Deadline(Clock::now() + timeout);
  }
  static Deadline after_seconds(double seconds) {
    return after(std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0)));
  }
  // A deadline that is already due: "try once, do not wait".
  static Deadline now() { return Deadline(Clock::now()); }

  bool expired() const { return Clock::now() >= at_; }
  std::chrono::milliseconds remaining() const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now());
    return left.count() > 0 ? left : std::chrono::milliseconds(0);
  }
  // Remaining time clamped to [0, cap]; handy for poll() loops that also re-check liveness.
  int poll_timeout_ms(int cap_ms) const {
    auto left = remaining().count();
    return static_cast<int>(left < cap_ms ? left : cap_ms);
  }
  Clock::time_point time_point() const { return at_; }
  Deadline earlier(const Deadline& other) const { return at_ < other.at_ ? *this : other; }

 private:
  explicit Deadline(Clock::time_point at) : at_(at) {}
  Clock::time_point at_;
};

}  // namespace memloom
