// Progress of a long operation (a file load or store of more than 1 GiB, a benchmark figure):
// whole lines at info, or on a terminal at any level, each tenth of the way and at most every
// 5 s, so a user sees it move instead of a silent minute.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace memloom::base {

class ProgressReport {
 public:
  static constexpr size_t kReportAbove = size_t{1} << 30;  // smaller operations stay silent

  // `what` starts each line: "wholememory_load_from_file rank 3". Reports only when `total`
  // bytes exceed kReportAbove (always_report: whatever the size).
  ProgressReport(std::string what, size_t total, bool always_report = false);
  // `bytes` more are done.
  void advance(size_t bytes);

 private:
  std::string what_;
  size_t total_;
  size_t done_ = 0;
  bool enabled_;
  int next_tenth_ = 1;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace memloom::base
