#include "bench/gpu/gpu_report.h"

#include <cstdio>

namespace memloom::bench::gpu {
namespace {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", value);
  return text;
}

std::string ratio_text(const Row& row) {
  if (!row.value || !row.ceiling || *row.ceiling <= 0) return "-";
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f", *row.value / *row.ceiling);
  return text;
}

std::string target_text(const Row& row) {
  if (!row.target) return "-";
  char text[32];
  std::snprintf(text, sizeof(text), ">= %.2f", *row.target);
  return text;
}

std::string ceiling_text(const Row& row) {
  if (row.ceiling_name.empty()) return "-";
  if (!row.ceiling) return "unavailable (" + row.ceiling_name + ")";
  return number(*row.ceiling) + " " + row.unit + " (" + row.ceiling_name + ")";
}

}  // namespace

std::string verdict(const Row& row) {
  if (!row.value) return row.why.rfind("skipped", 0) == 0 ? "SKIPPED" : "FAILED";
  if (row.ceiling_name.empty()) return "CEILING";
  if (!row.ceiling) return "NO CEILING";
  if (!row.target) return "REPORT";
  return *row.value / *row.ceiling >= *row.target ? "PASS" : "MISS";
}

void Report::add(Row row) {
  const std::string result = verdict(row);
  if (result == "MISS") ++misses_;
  if (result == "FAILED" || result == "NO CEILING") ++failures_;
  const std::string value = row.value ? number(*row.value) + " " + row.unit : "-";
  std::printf("%-44s %14s | ceiling %s | ratio %s | target %s | %s%s%s\n", row.figure.c_str(),
              value.c_str(), ceiling_text(row).c_str(), ratio_text(row).c_str(),
              target_text(row).c_str(), result.c_str(), row.why.empty() ? "" : " | ",
              row.why.c_str());
  std::fflush(stdout);
  rows_.push_back(std::move(row));
}

bool Report::append_markdown(const std::string& path, const std::string& heading) const {
  std::FILE* file = std::fopen(path.c_str(), "a");
  if (file == nullptr) {
    std::fprintf(stderr, "memloom-bench-gpu: cannot append to %s\n", path.c_str());
    return false;
  }
  std::fprintf(file, "\n### %s\n\n", heading.c_str());
  if (rows_.empty()) return std::fclose(file) == 0;
  std::fprintf(file, "| figure | value | ceiling | ratio | target | verdict | note |\n");
  std::fprintf(file, "|---|---|---|---|---|---|---|\n");
  for (const Row& row : rows_) {
    const std::string value = row.value ? number(*row.value) + " " + row.unit : "-";
    std::string why = row.why;
    for (char& c : why) c = c == '|' || c == '\n' ? ' ' : c;
    std::fprintf(file, "| %s | %s | %s | %s | %s | %s | %s |\n", row.figure.c_str(), value.c_str(),
                 ceiling_text(row).c_str(), ratio_text(row).c_str(), target_text(row).c_str(),
                 verdict(row).c_str(), why.c_str());
  }
  const bool ok = std::fclose(file) == 0;
  if (!ok) std::fprintf(stderr, "memloom-bench-gpu: writing %s failed\n", path.c_str());
  return ok;
}

}  // namespace memloom::bench::gpu
