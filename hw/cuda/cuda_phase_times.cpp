#include "hw/cuda/cuda_phase_times.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace memloom::cuda {
namespace {

struct Bracket {
  const char* name;
  cudaEvent_t start;
  cudaEvent_t end;
};

struct Brackets {
  std::mutex mutex;
  std::vector<Bracket> pending;
};

Brackets& brackets() {
  static auto* all = new Brackets();  // never destroyed: events outlive static destructors
  return *all;
}

cudaEvent_t timing_event() {
  cudaEvent_t event = nullptr;
  if (cudaEventCreate(&event) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return event;
}

}  // namespace

bool phase_times_enabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("MEMLOOM_CUDA_PHASE_TIMES");
    return value != nullptr && std::strcmp(value, "1") == 0;
  }();
  return enabled;
}

PhaseTimer::PhaseTimer(const char* name, cudaStream_t stream) {
  if (!phase_times_enabled()) return;
  start_ = timing_event();
  if (start_ == nullptr) return;
  if (cudaEventRecord(start_, stream) != cudaSuccess) {
    (void)cudaGetLastError();
    (void)cudaEventDestroy(start_);
    return;
  }
  name_ = name;
  stream_ = stream;
}

PhaseTimer::~PhaseTimer() {
  if (name_ == nullptr) return;
  cudaEvent_t end = timing_event();
  if (end == nullptr || cudaEventRecord(end, stream_) != cudaSuccess) {
    (void)cudaGetLastError();
    if (end != nullptr) (void)cudaEventDestroy(end);
    (void)cudaEventDestroy(start_);
    return;
  }
  auto& all = brackets();
  std::lock_guard<std::mutex> lock(all.mutex);
  all.pending.push_back(Bracket{name_, start_, end});
}

}  // namespace memloom::cuda

extern "C" __attribute__((visibility("default"))) long memloom_cuda_phase_times(char* text,
                                                                                size_t capacity) {
  using memloom::cuda::brackets;
  if (!memloom::cuda::phase_times_enabled()) return -1;
  std::vector<memloom::cuda::Bracket> taken;
  {
    auto& all = brackets();
    std::lock_guard<std::mutex> lock(all.mutex);
    taken.swap(all.pending);
  }
  std::map<std::string, std::pair<double, long>> sums;
  for (const auto& bracket : taken) {
    float milliseconds = 0;
    if (cudaEventSynchronize(bracket.end) == cudaSuccess &&
        cudaEventElapsedTime(&milliseconds, bracket.start, bracket.end) == cudaSuccess) {
      auto& sum = sums[bracket.name];
      sum.first += milliseconds / 1e3;
      sum.second += 1;
    } else {
      (void)cudaGetLastError();
    }
    (void)cudaEventDestroy(bracket.start);
    (void)cudaEventDestroy(bracket.end);
  }
  std::string out;
  for (const auto& [name, sum] : sums) {
    char line[64];
    std::snprintf(line, sizeof(line), "\t%.9g\t%ld\n", sum.first, sum.second);
    out += name + line;
  }
  if (capacity > 0) {
    const size_t copied = out.size() < capacity ? out.size() : capacity - 1;
    std::memcpy(text, out.data(), copied);
    text[copied] = '\0';
  }
  return static_cast<long>(out.size());
}
