// The embedding's gradient apply on the CUDA backend (issue 21): one rank on GPU 0, a 1M x 128
// FLOAT embedding in device memory with lazy Adam, every row once per call in a random order,
// gradients and indices in device memory, timed with CUDA events on the rank's own stream.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/embedding_tensors.h"
#include "bench/gpu/gpu_cuda.h"
#include "bench/gpu/gpu_figures.h"
#include "wholememory/embedding.h"

namespace memloom::bench::gpu {

Figures embedding_apply_rank(const RankInfo&) {
  use_device(0);
  check_wholememory(wholememory_init(0, LEVEL_WARN), "wholememory_init");
  Figures figures;
  try {
    wholememory_unique_id_t id{};
    check_wholememory(wholememory_create_unique_id(&id), "wholememory_create_unique_id");
    wholememory_comm_t comm = nullptr;
    check_wholememory(wholememory_create_communicator(&comm, id, 0, 1),
                      "wholememory_create_communicator");
    const auto rows = static_cast<int64_t>(kApplyRows);
    const auto dim = static_cast<int64_t>(kRowFloats);
    wholememory_tensor_description_t desc = packed_description(rows, dim, WHOLEMEMORY_DT_FLOAT);
    wholememory_embedding_t embedding = nullptr;
    check_wholememory(
        wholememory_create_embedding(&embedding, &desc, comm, WHOLEMEMORY_MT_CONTINUOUS,
                                     WHOLEMEMORY_ML_DEVICE, nullptr),
        "wholememory_create_embedding");
    wholememory_embedding_optimizer_t adam = nullptr;
    check_wholememory(wholememory_create_embedding_optimizer(&adam, WHOLEMEMORY_OPT_LAZY_ADAM),
                      "wholememory_create_embedding_optimizer");
    check_wholememory(wholememory_embedding_set_optimizer(embedding, adam),
                      "wholememory_embedding_set_optimizer");
    std::vector<int64_t> order(static_cast<size_t>(rows));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(21));
    DeviceBuffer indices(order.size() * sizeof(int64_t), "apply indices");
    DeviceBuffer grads(static_cast<size_t>(rows) * kRowBytes, "apply gradients");
    check_cuda(cudaMemcpy(indices.data(), order.data(), order.size() * sizeof(int64_t),
                          cudaMemcpyHostToDevice),
               "uploading the indices");
    fill_device(grads.data(), 0, static_cast<size_t>(rows) * kRowBytes);
    auto* index_tensor = pointer_tensor(indices.data(), rows, 0, WHOLEMEMORY_DT_INT64);
    auto* grad_tensor = pointer_tensor(grads.data(), rows, dim, WHOLEMEMORY_DT_FLOAT);
    Stream stream;
    const auto stream_int = reinterpret_cast<int64_t>(stream.get());
    figures["apply"] = best_event_seconds(
        stream.get(),
        [&] {
          check_wholememory(
              wholememory_embedding_gather_gradient_apply(embedding, index_tensor, grad_tensor,
                                                          false, 0.01F, nullptr, stream_int),
              "wholememory_embedding_gather_gradient_apply");
        },
        "embedding apply", 5, 2);
    wholememory_destroy_tensor(index_tensor);
    wholememory_destroy_tensor(grad_tensor);
    check_wholememory(wholememory_destroy_embedding(embedding), "wholememory_destroy_embedding");
    wholememory_destroy_embedding_optimizer(adam);
  } catch (const std::exception& error) {
    print_failure("embedding apply", error.what());
  }
  wholememory_finalize();
  return figures;
}

}  // namespace memloom::bench::gpu
