// memloom-bench memcpy: the single-thread memcpy reference itself, at the sizes the other
// benchmarks use, so a reader can see the machine's baseline and its noise.
#include <cstdio>

#include "bench/bench_registry.h"
#include "bench/reference.h"

namespace {

int run_memcpy(const std::vector<std::string>&) {
  const size_t sizes[] = {4096, 1u << 20, 64u << 20};
  for (size_t bytes : sizes) {
    double first = memloom::bench::memcpy_bandwidth(bytes, bytes >= (64u << 20) ? 5 : 50);
    double second = memloom::bench::memcpy_bandwidth(bytes, bytes >= (64u << 20) ? 5 : 50);
    memloom::bench::report("memcpy " + memloom::bench::format_bytes(bytes), second / 1e9, "GB/s",
                           first / 1e9, "an earlier memcpy run (noise)");
  }
  return 0;
}

}  // namespace

MEMLOOM_REGISTER_BENCH("memcpy", "single-thread memcpy reference and its run-to-run noise",
                       run_memcpy);
