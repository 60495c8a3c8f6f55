// Grouping by a stable radix sort: keys outside [0, key_limit) become key_limit, so they sort
// last and form at most one run, which the group count leaves out. The runs of the sorted keys
// are the groups (rows = the run's key), and the exclusive sum of the run lengths is `first`.
// Only the bits that key_limit needs are sorted (20 for a million rows), in 4-byte keys where
// key_limit fits.
#include "hw/cuda/cuda_row_grouping.h"

#include <array>
#include <bit>
#include <climits>
#include <cstring>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>
#include <mutex>
#include <string>

#include "hw/cuda/cuda_check.h"
#include "hw/cuda/cuda_phase_times.h"
#include "memloom/error.h"
#include "src/kernels/row_grouping_kernel.h"

namespace memloom::cuda {
namespace {

constexpr size_t kAlignment = 256;
constexpr unsigned kThreads = 256;

size_t aligned(size_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

// The scratch, carved in this order: sort keys, sorted keys (room for 8-byte keys; see
// SortKey), run lengths (count + 1), the run count, CUB's own temporary storage.
struct Scratch {
  void* sort_keys;
  void* sorted_keys;
  int64_t* run_lengths;
  int64_t* run_count;
  void* temporary;
  size_t temporary_bytes;
};

size_t fixed_bytes(int64_t count) {
  const auto n = static_cast<size_t>(count);
  return 2 * aligned(n * sizeof(uint64_t)) + aligned((n + 1) * sizeof(int64_t)) +
         aligned(sizeof(int64_t));
}

// The sort keys are 4 bytes wide whenever key_limit fits (any partition below 2^32 rows): the
// radix sort's passes then move 12 bytes a request instead of 16, and the encode reads half.
bool narrow_keys(int64_t key_limit) {
  return key_limit < (int64_t{1} << 32);
}

// CUB's temporary storage for the three steps, the most any of them asks for.
template <typename Key>
size_t query_temporary_bytes(int64_t count, int end_bit) {
  size_t sort = 0, encode = 0, scan = 0;
  check_cuda(cub::DeviceRadixSort::SortPairs(nullptr, sort, static_cast<const Key*>(nullptr),
                                             static_cast<Key*>(nullptr),
                                             static_cast<const int64_t*>(nullptr),
                                             static_cast<int64_t*>(nullptr), count, 0, end_bit),
             "cub::DeviceRadixSort::SortPairs (size)");
  check_cuda(
      cub::DeviceRunLengthEncode::Encode(
          nullptr, encode, static_cast<const Key*>(nullptr), static_cast<int64_t*>(nullptr),
          static_cast<int64_t*>(nullptr), static_cast<int64_t*>(nullptr), static_cast<int>(count)),
      "cub::DeviceRunLengthEncode::Encode (size)");
  check_cuda(cub::DeviceScan::ExclusiveSum(nullptr, scan, static_cast<const int64_t*>(nullptr),
                                           static_cast<int64_t*>(nullptr), count + 1),
             "cub::DeviceScan::ExclusiveSum (size)");
  size_t most = sort > encode ? sort : encode;
  return most > scan ? most : scan;
}

// query_temporary_bytes, remembered: each of its three size queries costs host time, and every
// grouping asked twice (the caller's scratch size, then the check) for the same count, call after
// call of a training loop's batches.
template <typename Key>
size_t temporary_bytes(int64_t count, int end_bit) {
  struct Known {
    int device = -1;
    int64_t count = 0;
    int end_bit = 0;
    size_t bytes = 0;
  };
  static std::mutex mutex;
  static std::array<Known, 8> known;
  static size_t next = 0;
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (const Known& entry : known) {
      if (entry.device == device && entry.count == count && entry.end_bit == end_bit) {
        return entry.bytes;
      }
    }
  }
  const size_t bytes = query_temporary_bytes<Key>(count, end_bit);
  std::lock_guard<std::mutex> lock(mutex);
  known[next++ % known.size()] = Known{device, count, end_bit, bytes};
  return bytes;
}

Scratch carve(void* base, int64_t count) {
  const auto n = static_cast<size_t>(count);
  auto* at = static_cast<char*>(base);
  Scratch scratch{};
  scratch.sort_keys = at;
  at += aligned(n * sizeof(uint64_t));
  scratch.sorted_keys = at;
  at += aligned(n * sizeof(uint64_t));
  scratch.run_lengths = reinterpret_cast<int64_t*>(at);
  at += aligned((n + 1) * sizeof(int64_t));
  scratch.run_count = reinterpret_cast<int64_t*>(at);
  at += aligned(sizeof(int64_t));
  scratch.temporary = at;
  return scratch;
}

template <typename Key>
__global__ void make_sort_keys(kernels::GroupRowsArgs args, Key* sort_keys) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < args.count;
       i += stride) {
    const int64_t key = args.keys[i];
    sort_keys[i] = static_cast<Key>(key >= 0 && key < args.key_limit ? key : args.key_limit);
  }
}

// One thread: the group count, less the run of unwanted keys if there is one.
__global__ void count_groups(kernels::GroupRowsArgs args, const int64_t* run_count) {
  int64_t groups = *run_count;
  if (groups > 0 && args.rows[groups - 1] == args.key_limit) --groups;
  *args.group_count = static_cast<unsigned long long>(groups);
}

template <typename Key>
void group_by(const kernels::GroupRowsArgs& args, int end_bit, cudaStream_t stream) {
  const size_t needed = fixed_bytes(args.count) + temporary_bytes<Key>(args.count, end_bit);
  if (args.scratch == nullptr || args.scratch_bytes < needed) {
    raise(Status::kInvalidInput, "row grouping of " + std::to_string(args.count) +
                                     " requests needs " + std::to_string(needed) +
                                     " scratch bytes, got " + std::to_string(args.scratch_bytes));
  }
  Scratch scratch = carve(args.scratch, args.count);
  scratch.temporary_bytes = args.scratch_bytes - fixed_bytes(args.count);
  auto* sort_keys = static_cast<Key*>(scratch.sort_keys);
  auto* sorted_keys = static_cast<Key*>(scratch.sorted_keys);
  const auto blocks =
      static_cast<unsigned>((static_cast<size_t>(args.count) + kThreads - 1) / kThreads < 4096
                                ? (static_cast<size_t>(args.count) + kThreads - 1) / kThreads
                                : 4096);
  {
    PhaseTimer timer("group_rows.sort_keys", stream);
    make_sort_keys<Key><<<blocks, kThreads, 0, stream>>>(args, sort_keys);
    check_cuda(cudaGetLastError(), "make_sort_keys launch");
  }
  size_t bytes = scratch.temporary_bytes;
  {
    PhaseTimer timer("group_rows.radix_sort", stream);
    check_cuda(cub::DeviceRadixSort::SortPairs(scratch.temporary, bytes, sort_keys, sorted_keys,
                                               args.positions, args.grouped_positions, args.count,
                                               0, end_bit, stream),
               "cub::DeviceRadixSort::SortPairs");
  }
  {
    PhaseTimer timer("group_rows.encode", stream);
    // Encode writes a length for each run only; the rest stay 0, so the sum past the last run
    // still reads the total.
    check_cuda(cudaMemsetAsync(scratch.run_lengths, 0,
                               (static_cast<size_t>(args.count) + 1) * sizeof(int64_t), stream),
               "cudaMemsetAsync");
    bytes = scratch.temporary_bytes;
    check_cuda(cub::DeviceRunLengthEncode::Encode(scratch.temporary, bytes, sorted_keys, args.rows,
                                                  scratch.run_lengths, scratch.run_count,
                                                  static_cast<int>(args.count), stream),
               "cub::DeviceRunLengthEncode::Encode");
  }
  bytes = scratch.temporary_bytes;
  {
    PhaseTimer timer("group_rows.scan", stream);
    check_cuda(cub::DeviceScan::ExclusiveSum(scratch.temporary, bytes, scratch.run_lengths,
                                             args.first, args.count + 1, stream),
               "cub::DeviceScan::ExclusiveSum");
  }
  PhaseTimer timer("group_rows.count", stream);
  count_groups<<<1, 1, 0, stream>>>(args, scratch.run_count);
  check_cuda(cudaGetLastError(), "count_groups launch");
}

void group(const kernels::GroupRowsArgs& args, cudaStream_t stream) {
  if (args.count > INT_MAX) {
    raise(Status::kInvalidInput, "a gradient apply groups at most " + std::to_string(INT_MAX) +
                                     " requests per rank, got " + std::to_string(args.count));
  }
  if (args.count == 0) {
    check_cuda(cudaMemsetAsync(args.first, 0, sizeof(int64_t), stream), "cudaMemsetAsync");
    check_cuda(cudaMemsetAsync(args.group_count, 0, sizeof(unsigned long long), stream),
               "cudaMemsetAsync");
    return;
  }
  const int end_bit = std::bit_width(static_cast<uint64_t>(args.key_limit)) > 0
                          ? static_cast<int>(std::bit_width(static_cast<uint64_t>(args.key_limit)))
                          : 1;
  if (narrow_keys(args.key_limit)) {
    group_by<uint32_t>(args, end_bit, stream);
  } else {
    group_by<uint64_t>(args, end_bit, stream);
  }
}

}  // namespace

size_t group_rows_scratch_bytes(int64_t count) {
  if (count <= 0) return 0;
  // The most either key width asks for: CUB's storage grows with the bits sorted, so each at its
  // widest (the key limit is not known here).
  const size_t wide = temporary_bytes<uint64_t>(count, 64);
  const size_t narrow = temporary_bytes<uint32_t>(count, 32);
  return fixed_bytes(count) + (wide > narrow ? wide : narrow);
}

void launch_group_rows(const void* args, size_t items, cudaStream_t stream) {
  if (items != 1) {
    raise(Status::kInvalidInput,
          "group_rows runs as one work item (the whole list), got " + std::to_string(items));
  }
  kernels::GroupRowsArgs copy;
  std::memcpy(&copy, args, sizeof(copy));
  group(copy, stream);
}

void load_group_rows() {
  // Two requests of one key, grouped with each key width: every step runs, which loads its
  // kernels.
  constexpr int64_t kCount = 2;
  const size_t scratch_bytes = group_rows_scratch_bytes(kCount);
  const size_t array_bytes = aligned(16 * sizeof(int64_t));
  void* memory = nullptr;
  check_cuda(cudaMalloc(&memory, array_bytes + scratch_bytes), "cudaMalloc (group_rows load)");
  cudaStream_t stream = nullptr;
  try {
    check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    auto* arrays = static_cast<int64_t*>(memory);
    check_cuda(cudaMemsetAsync(arrays, 0, array_bytes, stream), "cudaMemsetAsync");
    kernels::GroupRowsArgs args{};  // keys 0-1, positions 2-3, rows 4-5, first 6-8, ...
    args.keys = arrays;
    args.positions = arrays + 2;
    args.count = kCount;
    args.key_limit = 1;
    args.rows = arrays + 4;
    args.first = arrays + 6;
    args.grouped_positions = arrays + 9;
    args.group_count = reinterpret_cast<unsigned long long*>(arrays + 11);
    args.scratch = static_cast<char*>(memory) + array_bytes;
    args.scratch_bytes = scratch_bytes;
    group(args, stream);  // 4-byte keys
    args.key_limit = int64_t{1} << 32;
    group(args, stream);  // 8-byte keys
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (group_rows load)");
  } catch (...) {
    if (stream != nullptr) cudaStreamDestroy(stream);
    cudaFree(memory);
    throw;
  }
  cudaStreamDestroy(stream);
  cudaFree(memory);
}

}  // namespace memloom::cuda
