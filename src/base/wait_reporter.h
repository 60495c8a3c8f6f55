// A wait that talks: a program started without its peers must say what it waits for instead of
// being silent until its deadline. Loops that wait call poll() between their slices; past 5 s it
// logs at warn once, then every 15 s, with what is missing and the time left.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "memloom/deadline.h"

namespace memloom::base {

class WaitReporter {
 public:
  static constexpr std::chrono::seconds kFirstReport{5};
  static constexpr std::chrono::seconds kReportEvery{15};

  // `deadline` is the wait's end; what it started with is taken as its total.
  explicit WaitReporter(Deadline deadline);

  // `what` is called only when a report is due, so it may look things up:
  // "ranks 2,3 to arrive at communicator creation".
  void poll(const std::function<std::string()>& what);
  // The longest a waiter may sleep before its next poll() so reports come on time.
  std::chrono::milliseconds next_report_in() const;

 private:
  Deadline::Clock::time_point start_;
  Deadline deadline_;
  Deadline::Clock::time_point next_report_;
};

// "2,3" or "2,3,5 and 12 more": at most `limit` numbers of a long list.
std::string rank_list(const std::vector<int>& ranks, size_t limit = 16);

}  // namespace memloom::base
