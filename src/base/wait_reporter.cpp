#include "src/base/wait_reporter.h"

#include <cmath>

#include "src/base/log.h"

namespace memloom::base {
namespace {

long whole_seconds(Deadline::Clock::duration duration) {
  return std::lround(std::chrono::duration<double>(duration).count());
}

}  // namespace

WaitReporter::WaitReporter(Deadline deadline)
    : start_(Deadline::Clock::now()), deadline_(deadline), next_report_(start_ + kFirstReport) {}

void WaitReporter::poll(const std::function<std::string()>& what) {
  const auto now = Deadline::Clock::now();
  if (now < next_report_) return;
  next_report_ = now + kReportEvery;
  if (!log::enabled(log::Level::kWarn)) return;
  MEMLOOM_LOG(kWarn, "waiting for " << what() << ": " << whole_seconds(now - start_) << " of "
                                    << whole_seconds(deadline_.time_point() - start_) << " s");
}

std::chrono::milliseconds WaitReporter::next_report_in() const {
  auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(next_report_ - Deadline::Clock::now());
  return left.count() > 0 ? left : std::chrono::milliseconds(0);
}

std::string rank_list(const std::vector<int>& ranks, size_t limit) {
  std::string out;
  for (size_t i = 0; i < ranks.size() && i < limit; ++i) {
    if (i > 0) out += ',';
    out += std::to_string(ranks[i]);
  }
  if (ranks.size() > limit) out += " and " + std::to_string(ranks.size() - limit) + " more";
  return out;
}

}  // namespace memloom::base
