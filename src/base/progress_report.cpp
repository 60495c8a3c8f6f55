#include "src/base/progress_report.h"

#include <unistd.h>

#include <cstdio>

#include "src/base/log.h"

namespace memloom::base {

ProgressReport::ProgressReport(std::string what, size_t total, bool always_report)
    : what_(std::move(what)),
      total_(total),
      enabled_((always_report || total > kReportAbove) &&
               (log::enabled(log::Level::kInfo) || ::isatty(STDERR_FILENO) == 1)),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

void ProgressReport::advance(size_t bytes) {
  done_ += bytes;
  if (!enabled_ || total_ == 0) return;
  const auto now = std::chrono::steady_clock::now();
  const bool tenth = done_ * 10 >= total_ * static_cast<size_t>(next_tenth_);
  if (!tenth && now - last_ < std::chrono::seconds(5)) return;
  while (done_ * 10 >= total_ * static_cast<size_t>(next_tenth_)) ++next_tenth_;
  last_ = now;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  char line[160];
  std::snprintf(line, sizeof(line), "%.2f of %.2f GiB (%.0f%%), %.0f MiB/s",
                static_cast<double>(done_) / (1 << 30), static_cast<double>(total_) / (1 << 30),
                100.0 * static_cast<double>(done_) / static_cast<double>(total_),
                seconds > 0 ? static_cast<double>(done_) / (1 << 20) / seconds : 0.0);
  // A terminal at the default level still sees it: the user is watching.
  const log::Level level = log::enabled(log::Level::kInfo) ? log::Level::kInfo : log::Level::kWarn;
  log::write(level, what_ + ": " + line);
}

}  // namespace memloom::base
