#include "tests/embedding/graph_test_support.h"

#include <algorithm>
#include <random>

namespace memloom::embtest {
namespace {

void* record_malloc(wholememory_tensor_description_t* desc, wholememory_memory_allocation_type_t,
                    void* memory_context, void*) {
  auto* slot = static_cast<OutputSlot*>(memory_context);
  slot->count = desc->sizes[0];
  slot->dtype = desc->dtype;
  const size_t bytes =
      static_cast<size_t>(desc->sizes[0]) * wholememory_dtype_get_element_size(desc->dtype);
  slot->buffer = std::make_unique<UserBuffer>(bytes == 0 ? 8 : bytes);
  return slot->buffer->data();
}

void record_free(void*, void*) {}

}  // namespace

wholememory_env_func_t* recording_env() {
  static wholememory_env_func_t env = [] {
    wholememory_env_func_t made = *get_default_env_func();
    made.output_fns.malloc_fn = record_malloc;
    made.output_fns.free_fn = record_free;
    made.output_fns.global_context = nullptr;
    return made;
  }();
  return &env;
}

Csr random_csr(int64_t nodes, int64_t max_degree, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Csr graph;
  graph.row_ptr.push_back(0);
  std::vector<int32_t> all(static_cast<size_t>(nodes));
  for (int64_t n = 0; n < nodes; ++n) all[n] = static_cast<int32_t>(n);
  std::uniform_real_distribution<float> weight(0.1F, 5.0F);
  for (int64_t n = 0; n < nodes; ++n) {
    // Mostly small degrees, every tenth node a hub.
    const int64_t degree = n % 10 == 0 ? max_degree : static_cast<int64_t>(rng() % 12);
    std::shuffle(all.begin(), all.end(), rng);
    for (int64_t k = 0; k < std::min(degree, nodes); ++k) {
      graph.col.push_back(all[k]);
      graph.weight.push_back(weight(rng));
    }
    graph.row_ptr.push_back(static_cast<int64_t>(graph.col.size()));
  }
  return graph;
}

}  // namespace memloom::embtest
