// Helpers of the backend-path tests: forked ranks joining a core::Group (whose collectives come
// from the Platform, so NCCL on the CUDA backend), and device memory reached only by stream
// copies and kernels.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "hw/hal/platform.h"
#include "memloom/deadline.h"
#include "memloom/error.h"
#include "src/core/group.h"
#include "src/core/platform_loader.h"
#include "src/store/client.h"
#include "tests/support/multi_process.h"

namespace memloom::backend_test {

inline Deadline soon() {
  return Deadline::after(std::chrono::seconds(30));
}

// A forked rank's first call: a platform of its own (none inherited across fork), and its Group.
inline std::shared_ptr<core::Group> join(const testing::RankContext& context,
                                         const std::string& name) {
  core::release_platform();
  core::platform();
  std::shared_ptr<store::Client> client = store::Client::connect(context.store_url);
  return core::Group::create(client, store::KeyPrefix(context.job_id + "/" + name + "/"),
                             context.rank, context.world_size, soon());
}

inline testing::MultiProcessOptions ranks_on_nodes(int ranks, int nodes) {
  testing::MultiProcessOptions options;
  options.ranks = ranks;
  options.nodes = nodes;
  options.timeout = std::chrono::seconds(90);
  return options;
}

inline Status status_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& error) {
    return error.status();
  }
  return Status::kSuccess;
}

// Deterministic bytes any rank can recompute: byte i of stream s.
inline uint8_t pattern(uint64_t s, size_t i) {
  uint64_t x = (s * 0x9E3779B97F4A7C15ull) ^ (i * 0xBF58476D1CE4E5B9ull);
  x ^= x >> 31;
  return static_cast<uint8_t>(x * 0x94D049BB133111EBull >> 56);
}

inline long first_mismatch(const uint8_t* data, size_t bytes, uint64_t s) {
  for (size_t i = 0; i < bytes; ++i) {
    if (data[i] != pattern(s, i)) return static_cast<long>(i);
  }
  return -1;
}

}  // namespace memloom::backend_test
