#include "bench/reference.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

namespace memloom::bench {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double memcpy_bandwidth(size_t bytes, int repetitions) {
  std::vector<char> source(bytes, 1), destination(bytes, 0);
  std::memcpy(destination.data(), source.data(), bytes);  // fault the pages in first
  std::vector<double> rates;
  for (int i = 0; i < repetitions; ++i) {
    double start = now_seconds();
    std::memcpy(destination.data(), source.data(), bytes);
    double elapsed = now_seconds() - start;
    // Keep the copy observable so it is not optimised away.
    asm volatile("" : : "r"(destination.data()) : "memory");
    rates.push_back(static_cast<double>(bytes) / std::max(elapsed, 1e-9));
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

std::string format_rate(double bytes_per_second) {
  char text[64];
  if (bytes_per_second >= 1e9) std::snprintf(text, sizeof(text), "%.2f GB/s", bytes_per_second / 1e9);
  else if (bytes_per_second >= 1e6) std::snprintf(text, sizeof(text), "%.2f MB/s", bytes_per_second / 1e6);
  else std::snprintf(text, sizeof(text), "%.2f KB/s", bytes_per_second / 1e3);
  return text;
}

std::string format_bytes(size_t bytes) {
  char text[64];
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) std::snprintf(text, sizeof(text), "%zu MiB", bytes >> 20);
  else if (bytes >= 1024 && bytes % 1024 == 0) std::snprintf(text, sizeof(text), "%zu KiB", bytes >> 10);
  else std::snprintf(text, sizeof(text), "%zu B", bytes);
  return text;
}

void report(const std::string& name, double value, const std::string& unit, double reference,
            const std::string& reference_name) {
  double ratio = reference > 0 ? value / reference : 0.0;
  std::printf("%-48s %14.3f %-8s (%.2fx %s)\n", name.c_str(), value, unit.c_str(), ratio,
              reference_name.c_str());
  std::fflush(stdout);
}

}  // namespace memloom::bench
