// The figures of memloom-bench-gpu as they are printed (one plain line each) and appended to a
// markdown table: value, the ceiling it is compared with, their ratio, the target and a verdict.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace memloom::bench::gpu {

struct Row {
  std::string figure;
  std::optional<double> value;  // absent: the figure could not be measured
  std::string unit;
  std::optional<double> ceiling;  // in `unit`; absent for the ceilings themselves
  std::string ceiling_name;
  std::optional<double> target;  // minimum ratio; absent: reported only
  std::string why;               // why value is absent, or a note
};

class Report {
 public:
  // Prints the row at once (so a later crash loses nothing) and keeps it for the table.
  void add(Row row);
  // Appends a section (heading + table) to path; false (with a message) when it cannot.
  bool append_markdown(const std::string& path, const std::string& heading) const;
  int misses() const { return misses_; }
  int failures() const { return failures_; }

 private:
  std::vector<Row> rows_;
  int misses_ = 0;
  int failures_ = 0;
};

// "PASS", "MISS", "REPORT", "CEILING", "FAILED", "SKIPPED" (no value, why starts with "skipped")
// or "NO CEILING".
std::string verdict(const Row& row);

}  // namespace memloom::bench::gpu
