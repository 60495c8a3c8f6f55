// The sampling C API (wholememory/wholegraph_op.h): counts per centre (a kernel), their offsets
// (a scan on the device; the host only reads the total), outputs from the caller's output
// allocator, then the sampling kernel
// (src/kernels/sampling_kernel.h). Synchronous: it returns once the samples are written.
#include <cstring>
#include <limits>
#include <vector>

#include "memloom/error.h"
#include "src/core/platform_loader.h"
#include "src/kernels/count_scan_kernel.h"
#include "src/kernels/sampling_kernel.h"
#include "src/wholememory/embedding/stream_work.h"
#include "src/wholememory/graph/csr_arrays.h"
#include "src/wholememory/ops/row_copy_launch.h"
#include "src/wholememory/wholememory_error.h"
#include "wholememory/wholegraph_op.h"

namespace wm = memloom::wholememory;
using memloom::raise;
using memloom::Status;

namespace {

// The centre a count launch found outside the graph, if any, as the API's error.
void check_centers(unsigned long long bad, int64_t node_count) {
  if (bad != 0) {
    raise(Status::kInvalidInput, "center node " + std::to_string(bad - 1) +
                                     " (or a negative one) is not a node of a graph of " +
                                     std::to_string(node_count) + " nodes");
  }
}

// The device scan's offsets (count + 1) and, 8-byte aligned behind them, the bad-centre flag: the
// total and the flag then come back to the host in one read.
struct ScanResults {
  int32_t* offsets = nullptr;
  size_t flag_at = 0;  // bytes from offsets to the flag
};

ScanResults scan_results(wm::StreamWork& work, size_t count) {
  ScanResults results;
  constexpr size_t kFlag = sizeof(unsigned long long);
  results.flag_at = ((count + 1) * sizeof(int32_t) + kFlag - 1) / kFlag * kFlag;
  results.offsets = static_cast<int32_t*>(work.device_buffer(results.flag_at + kFlag));
  return results;
}

// The offsets of the samples (exclusive sum of args.counts) in args.offsets and in the caller's
// `offsets`; returns the total. On the device when the total cannot pass INT32 (at most
// max_samples per centre): only the total and the bad-centre flag cross to the host, in one read
// (the host's only wait before the sampling launch: the outputs' size depends on it).
int64_t offsets_on_device(wm::StreamWork& work, memloom::kernels::SampleArgs& args,
                          const ScanResults& results, void* offsets) {
  const auto count = static_cast<size_t>(args.center_count);
  memloom::kernels::ScanCountsArgs scan{};
  scan.counts = args.counts;
  scan.offsets = results.offsets;
  scan.count = args.center_count;
  scan.scratch_bytes =
      memloom::core::platform().kernel_scratch_bytes(memloom::hal::KernelId::kScanCounts, count);
  scan.scratch = work.device_buffer(scan.scratch_bytes);
  work.launch(memloom::hal::KernelId::kScanCounts, scan, 1);
  work.stream().copy(offsets, scan.offsets, (count + 1) * sizeof(int32_t));
  const size_t total_at = count * sizeof(int32_t);
  char tail[2 * sizeof(unsigned long long)];  // the total, padding, the flag
  const size_t tail_bytes = results.flag_at + sizeof(unsigned long long) - total_at;
  static_assert(sizeof(tail) >= sizeof(int32_t) + 4 + sizeof(unsigned long long));
  work.read(tail, reinterpret_cast<const char*>(results.offsets) + total_at, tail_bytes);
  unsigned long long bad = 0;
  int32_t total = 0;
  std::memcpy(&total, tail, sizeof(total));
  std::memcpy(&bad, tail + (results.flag_at - total_at), sizeof(bad));
  check_centers(bad, args.node_count);
  args.offsets = scan.offsets;
  return total;
}

// The same through the host, which checks every partial sum against INT32.
int64_t offsets_on_host(wm::StreamWork& work, memloom::kernels::SampleArgs& args, void* offsets) {
  const auto count = static_cast<size_t>(args.center_count);
  std::vector<int32_t> counts(count);
  work.read(counts.data(), args.counts, count * sizeof(int32_t));
  unsigned long long bad = 0;
  work.read(&bad, args.bad_center, sizeof(bad));
  check_centers(bad, args.node_count);
  std::vector<int32_t> host_offsets(count + 1, 0);
  int64_t total = 0;
  for (size_t i = 0; i < count; ++i) {
    total += counts[i];
    MEMLOOM_CHECK_ARG(total <= std::numeric_limits<int32_t>::max(),
                      "more than 2^31 - 1 samples in one call (INT offsets)");
    host_offsets[i + 1] = static_cast<int32_t>(total);
  }
  args.offsets = work.upload(host_offsets);  // staged: the copy below may run after we return
  work.stream().copy(offsets, args.offsets, host_offsets.size() * sizeof(int32_t));
  return total;
}

void sample(wholememory_tensor_t row_ptr_handle, wholememory_tensor_t col_handle,
            wholememory_tensor_t weight_handle, wholememory_tensor_t centers_handle,
            int max_sample_count, wholememory_tensor_t offsets_handle, void* dest_context,
            void* center_context, void* edge_context, unsigned long long seed,
            wholememory_env_func_t* env, void* stream) {
  const auto row_ptr =
      wm::csr_array(row_ptr_handle, {WHOLEMEMORY_DT_INT, WHOLEMEMORY_DT_INT64}, "csr_row_ptr");
  const auto col =
      wm::csr_array(col_handle, {WHOLEMEMORY_DT_INT, WHOLEMEMORY_DT_INT64}, "csr_col_ptr");
  std::optional<wm::CsrArray> weight;
  if (weight_handle != nullptr) {
    weight = wm::csr_array(weight_handle, {WHOLEMEMORY_DT_FLOAT, WHOLEMEMORY_DT_DOUBLE},
                           "csr_weight_ptr");
    MEMLOOM_CHECK_ARG(weight->count == col.count,
                      "csr_weight_ptr has " + std::to_string(weight->count) + " weights for " +
                          std::to_string(col.count) + " edges");
  }
  MEMLOOM_CHECK_ARG(row_ptr.count >= 1, "csr_row_ptr needs nodes + 1 entries");
  const auto centers = wm::local_array(
      centers_handle, 1, {WHOLEMEMORY_DT_INT, WHOLEMEMORY_DT_INT64}, "center_nodes_tensor");
  const auto offsets =
      wm::local_array(offsets_handle, 1, {WHOLEMEMORY_DT_INT}, "output_sample_offset_tensor");
  MEMLOOM_CHECK_ARG(offsets.count == centers.count + 1,
                    "output_sample_offset_tensor needs " + std::to_string(centers.count + 1) +
                        " entries, has " + std::to_string(offsets.count));
  MEMLOOM_CHECK_ARG(dest_context != nullptr, "output_dest_memory_context is null");
  wm::StreamWork work(stream, env);

  memloom::kernels::SampleArgs args{};
  args.row_ptr = row_ptr.table;
  args.col = col.table;
  args.weighted = weight.has_value();
  if (weight) args.weight = weight->table;
  args.centers = centers.data;
  args.center_type = wm::to_op_dtype(centers.dtype);
  args.center_count = centers.count;
  args.node_count = row_ptr.count - 1;
  args.max_samples = max_sample_count;
  args.seed = seed;
  const auto count = static_cast<size_t>(centers.count);
  const bool scan_on_device = max_sample_count > 0 && centers.count * int64_t{max_sample_count} <=
                                                          std::numeric_limits<int32_t>::max();
  args.counts = static_cast<int32_t*>(work.device_buffer((count + 1) * sizeof(int32_t)));
  ScanResults results;
  if (scan_on_device) {
    results = scan_results(work, count);
    args.bad_center = reinterpret_cast<unsigned long long*>(
        reinterpret_cast<char*>(results.offsets) + results.flag_at);
    static const unsigned long long kZero = 0;  // static: the copy may read it after we return
    work.stream().copy(args.bad_center, &kZero, sizeof(kZero));
  } else {
    args.bad_center = work.upload(std::vector<unsigned long long>{0});
  }
  work.launch(memloom::hal::KernelId::kSampleCount, args, count + 1);  // + 1: the closing 0
  const int64_t total = scan_on_device ? offsets_on_device(work, args, results, offsets.data)
                                       : offsets_on_host(work, args, offsets.data);
  auto* checked_env = work.env();
  args.out_nodes =
      wm::output_malloc(checked_env, dest_context, total, col.dtype, "the sampled nodes");
  if (center_context != nullptr) {
    args.out_center = static_cast<int32_t*>(wm::output_malloc(
        checked_env, center_context, total, WHOLEMEMORY_DT_INT, "the centre ids"));
  }
  if (edge_context != nullptr) {
    args.out_edge = static_cast<int64_t*>(
        wm::output_malloc(checked_env, edge_context, total, WHOLEMEMORY_DT_INT64, "the edge ids"));
  }
  const auto samples = static_cast<size_t>(total);
  if (memloom::kernels::needs_pick_scratch(args.weighted, max_sample_count)) {
    args.picked = static_cast<int64_t*>(work.device_buffer(samples * sizeof(int64_t)));
  }
  if (args.weighted) args.keys = static_cast<double*>(work.device_buffer(samples * sizeof(double)));
  work.launch(memloom::hal::KernelId::kSampleNeighbours, args, count);
  work.synchronize();
}

}  // namespace

// The definitions name their parameters as sample() does; the header keeps upstream's names.
extern "C" {

wholememory_error_code_t wholegraph_csr_unweighted_sample_without_replacement(
    wholememory_tensor_t row_ptr_handle, wholememory_tensor_t col_handle,
    wholememory_tensor_t centers_handle, int max_sample_count, wholememory_tensor_t offsets_handle,
    void* dest_context, void* center_context, void* edge_context, unsigned long long seed,
    wholememory_env_func_t* env, void* stream) {
  return wm::guarded("wholegraph_csr_unweighted_sample_without_replacement", [&] {
    sample(row_ptr_handle, col_handle, nullptr, centers_handle, max_sample_count, offsets_handle,
           dest_context, center_context, edge_context, seed, env, stream);
  });
}

wholememory_error_code_t wholegraph_csr_weighted_sample_without_replacement(
    wholememory_tensor_t row_ptr_handle, wholememory_tensor_t col_handle,
    wholememory_tensor_t weight_handle, wholememory_tensor_t centers_handle, int max_sample_count,
    wholememory_tensor_t offsets_handle, void* dest_context, void* center_context,
    void* edge_context, unsigned long long seed, wholememory_env_func_t* env, void* stream) {
  return wm::guarded("wholegraph_csr_weighted_sample_without_replacement", [&] {
    MEMLOOM_CHECK_ARG(weight_handle != nullptr, "wm_csr_weight_ptr_tensor is null");
    sample(row_ptr_handle, col_handle, weight_handle, centers_handle, max_sample_count,
           offsets_handle, dest_context, center_context, edge_context, seed, env, stream);
  });
}

}  // extern "C"
