// Helpers of the sampling and graph operation tests: an environment whose output allocator keeps
// what it allocated (device memory, read back by the test), and random CSR graphs.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tests/embedding/embedding_test_support.h"
#include "wholememory/env_func_ptrs.h"

namespace memloom::embtest {

// One output of an operation: the memory the allocator handed out for it.
struct OutputSlot {
  std::unique_ptr<UserBuffer> buffer;
  int64_t count = -1;  // elements asked for; -1: never allocated
  wholememory_dtype_t dtype = WHOLEMEMORY_DT_UNKNOWN;
  template <typename T>
  std::vector<T> values() const {
    if (count <= 0) return {};
    const auto bytes = buffer->download();
    std::vector<T> out(static_cast<size_t>(count));
    std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
    return out;
  }
};

// The default temporary functions, and an output allocator that fills the OutputSlot passed as
// the memory context.
wholememory_env_func_t* recording_env();

struct Csr {
  std::vector<int64_t> row_ptr;
  std::vector<int32_t> col;  // distinct neighbours per row
  std::vector<float> weight;
  int64_t nodes() const { return static_cast<int64_t>(row_ptr.size()) - 1; }
};

// `nodes` nodes of degree 0 to max_degree (a few hubs of high degree), random weights.
Csr random_csr(int64_t nodes, int64_t max_degree, uint64_t seed);

}  // namespace memloom::embtest
