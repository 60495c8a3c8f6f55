// Where an operation's time goes, at debug log level: an operation marks the end of each phase and
// one line lists them when it finishes (also when it fails). Costs nothing but a clock read when
// debug logging is off (MEMLOOM_LOG_LEVEL), so exchanges can be profiled on a machine where no
// profiler is installed, such as the lent GPU machines.
#pragma once

#include <chrono>
#include <sstream>
#include <string>

#include "src/base/log.h"

namespace memloom::base {

class PhaseTrace {
 public:
  explicit PhaseTrace(std::string operation)
      : enabled_(log::enabled(log::Level::kDebug)), operation_(std::move(operation)) {
    if (enabled_) start_ = last_ = Clock::now();
  }
  ~PhaseTrace() {
    if (!enabled_) return;
    mark("the rest");  // what ran after the last mark: releasing buffers, waiting for the stream
    MEMLOOM_LOG(kDebug, operation_ << ": " << milliseconds(start_, last_) << " ms ("
                                   << phases_.str() << ")");
  }
  PhaseTrace(const PhaseTrace&) = delete;
  PhaseTrace& operator=(const PhaseTrace&) = delete;

  // The phase that ends now.
  void mark(const char* phase) {
    if (!enabled_) return;
    const auto now = Clock::now();
    if (phases_.tellp() > 0) phases_ << ", ";
    phases_ << phase << " " << milliseconds(last_, now);
    last_ = now;
  }

 private:
  using Clock = std::chrono::steady_clock;
  static double milliseconds(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double, std::milli>(to - from).count();
  }

  bool enabled_;
  std::string operation_;
  Clock::time_point start_, last_;
  std::ostringstream phases_;
};

}  // namespace memloom::base
