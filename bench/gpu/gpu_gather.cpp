// WholeMemory gathers on the CUDA backend: kGatherRows random 512-byte rows per rank from a
// kTableRows table on the ranks' GPUs, int64 indices and the output in the rank's device memory,
// timed with CUDA events on the rank's own cudaStream_t (passed to wholememory_gather as is).
// The first gather is checked row by row (column 0 of row e holds e), then timed.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/gpu/gpu_cuda.h"
#include "bench/gpu/gpu_figures.h"
#include "wholememory/wholememory_op.h"
#include "wholememory/wholememory_tensor.h"

namespace memloom::bench::gpu {
namespace {

constexpr int kSamples = 10;
constexpr int kGathersPerSample = 4;

// The 128-byte unique id travels from rank 0 to the others in 16 rendezvous mailboxes.
constexpr int kIdWords = sizeof(wholememory_unique_id_t) / sizeof(uint64_t);
static_assert(sizeof(wholememory_unique_id_t) % sizeof(uint64_t) == 0);
static_assert(kIdWords <= RankRendezvous::kMailboxes);

void check_wm(wholememory_error_code_t code, const std::string& what) {
  if (code != WHOLEMEMORY_SUCCESS) {
    throw std::runtime_error(what + " returned WholeMemory error " + std::to_string(code) +
                             " (the reason is in memloom's log above)");
  }
}

// wholememory_init .. wholememory_finalize, which also frees whatever an exception left alive.
class WholeMemorySession {
 public:
  WholeMemorySession() { check_wm(wholememory_init(0, LEVEL_WARN), "wholememory_init"); }
  ~WholeMemorySession() { wholememory_finalize(); }
  WholeMemorySession(const WholeMemorySession&) = delete;
  WholeMemorySession& operator=(const WholeMemorySession&) = delete;
};

wholememory_comm_t make_communicator(const RankInfo& info) {
  wholememory_unique_id_t id{};
  uint64_t words[kIdWords];
  if (info.rank == 0) {
    check_wm(wholememory_create_unique_id(&id), "wholememory_create_unique_id");
    std::memcpy(words, &id, sizeof(id));
    for (int i = 0; i < kIdWords; ++i) info.rendezvous->publish(i, words[i]);
  } else {
    for (int i = 0; i < kIdWords; ++i) words[i] = info.rendezvous->wait_for(i);
    std::memcpy(&id, words, sizeof(id));
  }
  wholememory_comm_t comm = nullptr;
  check_wm(wholememory_create_communicator(&comm, id, info.rank, info.world_size),
           "wholememory_create_communicator");
  return comm;
}

wholememory_tensor_t pointer_tensor(void* data, wholememory_tensor_description_t desc) {
  wholememory_tensor_t tensor = nullptr;
  check_wm(wholememory_make_tensor_from_pointer(&tensor, data, &desc),
           "wholememory_make_tensor_from_pointer");
  return tensor;
}

wholememory_tensor_description_t table_description(int64_t rows) {
  wholememory_tensor_description_t desc;
  wholememory_initialize_tensor_desc(&desc);
  desc.dim = 2;
  desc.sizes[0] = rows;
  desc.sizes[1] = static_cast<int64_t>(kRowFloats);
  desc.strides[0] = static_cast<int64_t>(kRowFloats);
  desc.dtype = WHOLEMEMORY_DT_FLOAT;
  return desc;
}

// Set-up copies go through a host buffer of this many rows (32 MiB): whole rows, because a 2-D
// copy of one 4-byte column can take the driver a row at a time.
constexpr size_t kStagingRows = size_t(1) << 16;

// Writes e into column 0 of each row e this rank holds (the other columns: 0).
void label_local_rows(wholememory_tensor_t table) {
  wholememory_tensor_t local = nullptr;
  size_t first = 0;
  check_wm(wholememory_tensor_map_local_tensor(table, &local),
           "wholememory_tensor_map_local_tensor");
  const auto rows = static_cast<size_t>(wholememory_tensor_get_tensor_description(local)->sizes[0]);
  auto* data = static_cast<char*>(wholememory_tensor_get_data_pointer(local));
  check_wm(wholememory_tensor_get_local_entry_start(&first, table),
           "wholememory_tensor_get_local_entry_start");
  std::vector<float> staging(kStagingRows * kRowFloats, 0.0f);
  for (size_t done = 0; done < rows; done += kStagingRows) {
    const size_t count = std::min(kStagingRows, rows - done);
    for (size_t r = 0; r < count; ++r)
      staging[r * kRowFloats] = static_cast<float>(first + done + r);
    check_cuda(cudaMemcpy(data + done * kRowBytes, staging.data(), count * kRowBytes,
                          cudaMemcpyHostToDevice),
               "labelling the table's local rows");
  }
  wholememory_destroy_tensor(local);  // the view; the memory stays with the table
}

void check_gathered(const char* output, const std::vector<int64_t>& indices, const char* type) {
  std::vector<float> staging(kStagingRows * kRowFloats);
  for (size_t done = 0; done < indices.size(); done += kStagingRows) {
    const size_t count = std::min(kStagingRows, indices.size() - done);
    check_cuda(cudaMemcpy(staging.data(), output + done * kRowBytes, count * kRowBytes,
                          cudaMemcpyDeviceToHost),
               "reading the gathered rows back");
    for (size_t r = 0; r < count; ++r) {
      const size_t i = done + r;
      if (staging[r * kRowFloats] != static_cast<float>(indices[i])) {
        throw std::runtime_error(std::string(type) + " gather: output row " + std::to_string(i) +
                                 " holds row " + std::to_string(staging[r * kRowFloats]) +
                                 ", expected row " + std::to_string(indices[i]));
      }
    }
  }
}

// The names RESULTS.md gives the memory types the figures compare.
const char* type_name(wholememory_memory_type_t type) {
  static const std::map<wholememory_memory_type_t, const char*> kNames = {
      {WHOLEMEMORY_MT_CONTINUOUS, "CONTINUOUS"},
      {WHOLEMEMORY_MT_CHUNKED, "CHUNKED"},
      {WHOLEMEMORY_MT_DISTRIBUTED, "DISTRIBUTED"},
      {WHOLEMEMORY_MT_HIERARCHY, "HIERARCHY"}};
  const auto name = kNames.find(type);
  return name == kNames.end() ? "other" : name->second;
}

// Best seconds of one gather on this rank, working on `device`. Every rank of the job runs it at
// the same time, or, when `gathering` is false for this rank, only holds its part of the table
// and keeps step.
double gather_seconds(const RankInfo& info, wholememory_memory_type_t type, int device,
                      bool gathering = true) {
  use_device(device);
  WholeMemorySession session;
  wholememory_comm_t comm = make_communicator(info);
  auto desc = table_description(static_cast<int64_t>(kTableRows));
  wholememory_tensor_t table = nullptr;
  check_wm(wholememory_create_tensor(&table, &desc, comm, type, WHOLEMEMORY_ML_DEVICE),
           std::string("wholememory_create_tensor ") + type_name(type));
  label_local_rows(table);

  std::mt19937_64 rng(1234 + static_cast<uint64_t>(info.rank));
  std::uniform_int_distribution<int64_t> pick(0, static_cast<int64_t>(kTableRows) - 1);
  std::vector<int64_t> indices(kGatherRows);
  for (auto& index : indices) index = pick(rng);
  DeviceBuffer index_memory(kGatherRows * sizeof(int64_t), "the gather's indices");
  DeviceBuffer output_memory(kGatherRows * kRowBytes, "the gather's output");
  check_cuda(cudaMemcpy(index_memory.data(), indices.data(), kGatherRows * sizeof(int64_t),
                        cudaMemcpyHostToDevice),
             "copying the indices to the device");
  // Every rank's labels and indices have landed before any rank's first gather reads them.
  settle_default_stream("labelling the table");
  wholememory_tensor_description_t index_desc;
  wholememory_initialize_tensor_desc(&index_desc);
  index_desc.dim = 1;
  index_desc.sizes[0] = static_cast<int64_t>(kGatherRows);
  index_desc.dtype = WHOLEMEMORY_DT_INT64;
  wholememory_tensor_t index_tensor = pointer_tensor(index_memory.data(), index_desc);
  wholememory_tensor_t output_tensor =
      pointer_tensor(output_memory.data(), table_description(static_cast<int64_t>(kGatherRows)));
  Stream stream;
  auto gather = [&] {
    check_wm(wholememory_gather(table, index_tensor, output_tensor, nullptr, stream.get()),
             "wholememory_gather");
  };
  check_wm(wholememory_communicator_barrier(comm), "wholememory_communicator_barrier");
  if (gathering) {
    gather();  // warm-up (temporary memory, first touches), checked
    wait_stream(stream.get(), "the first gather");
    check_gathered(output_memory.bytes(), indices, type_name(type));
  }

  EventTimer timer;
  double best = 1e30;
  for (int sample = 0; sample < kSamples; ++sample) {
    // Every rank starts its sample together, so remote reads share the links as in training.
    check_wm(wholememory_communicator_barrier(comm), "wholememory_communicator_barrier");
    if (!gathering) continue;
    timer.start(stream.get());
    for (int i = 0; i < kGathersPerSample; ++i) gather();
    const double seconds = timer.stop(stream.get(), "gathers") / kGathersPerSample;
    if (seconds < best) best = seconds;
  }
  wholememory_destroy_tensor(index_tensor);
  wholememory_destroy_tensor(output_tensor);
  check_wm(wholememory_communicator_barrier(comm), "wholememory_communicator_barrier");
  wholememory_destroy_tensor(table);
  return best;
}

}  // namespace

Figures local_gather_rank(const RankInfo& info) {
  return {{"gather", gather_seconds(info, WHOLEMEMORY_MT_CONTINUOUS, info.local_rank)}};
}

Figures spread_gather_rank(const RankInfo& info, wholememory_memory_type_t type) {
  return {
      {"gather rank " + std::to_string(info.rank), gather_seconds(info, type, info.local_rank)}};
}

Figures node_per_gpu_gather_rank(const RankInfo& info, wholememory_memory_type_t type) {
  // Each emulated node's one rank on its own GPU: the backend reads MEMLOOM_DEVICE before it
  // starts (its default, the local rank, is 0 on every node).
  const int device = info.rank;
  ::setenv("MEMLOOM_DEVICE", std::to_string(device).c_str(), 1);
  return {{"gather rank " + std::to_string(info.rank), gather_seconds(info, type, device)}};
}

Figures rank_zero_gather_rank(const RankInfo& info, wholememory_memory_type_t type) {
  const double seconds = gather_seconds(info, type, info.local_rank, info.rank == 0);
  if (info.rank != 0) return {};
  return {{"gather rank 0", seconds}};
}

}  // namespace memloom::bench::gpu
