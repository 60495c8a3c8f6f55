// Unweighted neighbour sampling on the CUDA backend (issue 21): fanout 30 for 1M random centres
// of a power-law graph on GPU 0, memloom's wholegraph_csr_unweighted_sample_without_replacement
// against the plain CUDA sampler of gpu_sampling_reference.cu, in alternating rounds of the same
// run (best of each side), both writing into buffers allocated once.
//
// The graph: N = edges / 25 nodes, node r of degree max(1, K / sqrt(r + 1)) (so the number of
// nodes of degree above d falls as d^-2, a power law; the first nodes are hubs of tens of
// thousands of edges), K chosen for the requested edge count; neighbours are random node ids.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/embedding_tensors.h"
#include "bench/gpu/gpu_cuda.h"
#include "bench/gpu/gpu_figures.h"
#include "bench/gpu/gpu_sampling_reference.h"
#include "wholememory/env_func_ptrs.h"
#include "wholememory/wholegraph_op.h"

namespace memloom::bench::gpu {
namespace {

constexpr int kFanout = 30;
constexpr int64_t kCentres = int64_t(1) << 20;
constexpr int kRounds = 5;
constexpr unsigned long long kSeed = 21;

// An output allocator over one buffer allocated up front: the figure times sampling, not
// allocation (upstream's callers allocate through PyTorch's caching allocator).
struct FixedOutput {
  void* data = nullptr;
  size_t capacity = 0;
};

void* fixed_malloc(wholememory_tensor_description_t* desc, wholememory_memory_allocation_type_t,
                   void* memory_context, void*) {
  auto* output = static_cast<FixedOutput*>(memory_context);
  const auto bytes =
      static_cast<size_t>(desc->sizes[0]) * wholememory_dtype_get_element_size(desc->dtype);
  return bytes <= output->capacity ? output->data : nullptr;
}

void fixed_free(void*, void*) {}

// Row pointers of the power-law degrees, on the host.
std::vector<int64_t> power_law_row_ptr(int64_t edges) {
  const int64_t nodes = std::max<int64_t>(edges / 25, 1);
  const double scale = static_cast<double>(edges) / (2.0 * std::sqrt(static_cast<double>(nodes)));
  std::vector<int64_t> row_ptr(static_cast<size_t>(nodes) + 1, 0);
  for (int64_t r = 0; r < nodes; ++r) {
    const auto degree =
        std::max<int64_t>(1, static_cast<int64_t>(scale / std::sqrt(static_cast<double>(r + 1))));
    row_ptr[static_cast<size_t>(r) + 1] = row_ptr[static_cast<size_t>(r)] + degree;
  }
  return row_ptr;
}

int32_t last_offset(const int32_t* offsets, int64_t count) {
  int32_t total = 0;
  check_cuda(cudaMemcpy(&total, offsets + count, sizeof(total), cudaMemcpyDeviceToHost),
             "reading the sample count");
  return total;
}

}  // namespace

Figures sampling_rank(const RankInfo&, int64_t edges) {
  use_device(0);
  check_wholememory(wholememory_init(0, LEVEL_WARN), "wholememory_init");
  Figures figures;
  try {
    const std::vector<int64_t> host_row_ptr = power_law_row_ptr(edges);
    const auto nodes = static_cast<int64_t>(host_row_ptr.size()) - 1;
    const int64_t edge_count = host_row_ptr.back();
    if (edge_count > INT32_MAX) throw std::runtime_error("graph too large for INT32 offsets");
    DeviceBuffer row_ptr(host_row_ptr.size() * sizeof(int64_t), "row pointers");
    DeviceBuffer col(static_cast<size_t>(edge_count) * sizeof(int32_t), "columns");
    DeviceBuffer centres(static_cast<size_t>(kCentres) * sizeof(int64_t), "centres");
    const size_t out_capacity = static_cast<size_t>(kCentres) * kFanout * sizeof(int32_t);
    DeviceBuffer memloom_out(out_capacity, "memloom samples");
    DeviceBuffer reference_out(out_capacity, "reference samples");
    const size_t offset_bytes = static_cast<size_t>(kCentres + 1) * sizeof(int32_t);
    DeviceBuffer memloom_offsets(offset_bytes, "memloom offsets");
    DeviceBuffer reference_offsets(offset_bytes, "reference offsets");
    const size_t scratch_bytes = reference_sampler_scratch_bytes(kCentres);
    DeviceBuffer scratch(scratch_bytes, "reference scratch");
    Stream stream;
    check_cuda(cudaMemcpy(row_ptr.data(), host_row_ptr.data(),
                          host_row_ptr.size() * sizeof(int64_t), cudaMemcpyHostToDevice),
               "uploading the row pointers");
    fill_random_ids(static_cast<int32_t*>(col.data()), edge_count, nodes, 1, stream.get());
    fill_random_ids(static_cast<int64_t*>(centres.data()), kCentres, nodes, 2, stream.get());
    wait_stream(stream.get(), "generating the graph");

    auto* row_ptr_tensor = pointer_tensor(row_ptr.data(), nodes + 1, 0, WHOLEMEMORY_DT_INT64);
    auto* col_tensor = pointer_tensor(col.data(), edge_count, 0, WHOLEMEMORY_DT_INT);
    auto* centre_tensor = pointer_tensor(centres.data(), kCentres, 0, WHOLEMEMORY_DT_INT64);
    auto* offset_tensor =
        pointer_tensor(memloom_offsets.data(), kCentres + 1, 0, WHOLEMEMORY_DT_INT);
    wholememory_env_func_t env = *get_default_env_func();
    env.output_fns.malloc_fn = fixed_malloc;
    env.output_fns.free_fn = fixed_free;
    env.output_fns.global_context = nullptr;
    FixedOutput output{memloom_out.data(), out_capacity};
    auto memloom_sample = [&] {
      check_wholememory(wholegraph_csr_unweighted_sample_without_replacement(
                            row_ptr_tensor, col_tensor, centre_tensor, kFanout, offset_tensor,
                            &output, nullptr, nullptr, kSeed, &env, stream.get()),
                        "wholegraph_csr_unweighted_sample_without_replacement");
    };
    auto reference = [&] {
      reference_sample(
          static_cast<const int64_t*>(row_ptr.data()), static_cast<const int32_t*>(col.data()),
          static_cast<const int64_t*>(centres.data()), kCentres, kFanout, kSeed,
          static_cast<int32_t*>(reference_offsets.data()),
          static_cast<int32_t*>(reference_out.data()), scratch.data(), scratch_bytes, stream.get());
    };
    double best = 1e30, best_reference = 1e30;
    for (int round = 0; round < kRounds; ++round) {
      best = std::min(best, best_event_seconds(stream.get(), memloom_sample, "sampling", 1, 2));
      best_reference = std::min(
          best_reference, best_event_seconds(stream.get(), reference, "reference sampling", 1, 2));
    }
    // Both sides drew min(fanout, degree) per centre: equal totals show the work was done.
    const int32_t samples =
        last_offset(static_cast<const int32_t*>(memloom_offsets.data()), kCentres);
    const int32_t reference_samples =
        last_offset(static_cast<const int32_t*>(reference_offsets.data()), kCentres);
    if (samples != reference_samples || samples <= 0) {
      throw std::runtime_error("memloom sampled " + std::to_string(samples) +
                               " edges, the reference " + std::to_string(reference_samples));
    }
    figures["sample"] = best;
    figures["sample reference"] = best_reference;
    figures["sampled edges"] = samples;
    figures["graph edges"] = static_cast<double>(edge_count);
    wholememory_destroy_tensor(row_ptr_tensor);
    wholememory_destroy_tensor(col_tensor);
    wholememory_destroy_tensor(centre_tensor);
    wholememory_destroy_tensor(offset_tensor);
  } catch (const std::exception& error) {
    print_failure("sampling", error.what());
  }
  wholememory_finalize();
  return figures;
}

}  // namespace memloom::bench::gpu
