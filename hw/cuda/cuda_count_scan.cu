#include "hw/cuda/cuda_count_scan.h"

#include <cstring>
#include <cub/device/device_scan.cuh>
#include <string>

#include "hw/cuda/cuda_check.h"
#include "memloom/error.h"
#include "src/kernels/count_scan_kernel.h"

namespace memloom::cuda {
namespace {

void scan(const kernels::ScanCountsArgs& args, cudaStream_t stream) {
  size_t bytes = args.scratch_bytes;
  check_cuda(cub::DeviceScan::ExclusiveSum(args.scratch, bytes, args.counts, args.offsets,
                                           args.count + 1, stream),
             "cub::DeviceScan::ExclusiveSum");
}

}  // namespace

size_t scan_counts_scratch_bytes(int64_t count) {
  size_t bytes = 0;
  check_cuda(cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<const int32_t*>(nullptr),
                                           static_cast<int32_t*>(nullptr), count + 1),
             "cub::DeviceScan::ExclusiveSum (size)");
  return bytes;
}

void launch_scan_counts(const void* args, size_t items, cudaStream_t stream) {
  if (items != 1) {
    raise(Status::kInvalidInput,
          "scan_counts runs as one work item (the whole list), got " + std::to_string(items));
  }
  kernels::ScanCountsArgs copy;
  std::memcpy(&copy, args, sizeof(copy));
  if (copy.scratch == nullptr || copy.scratch_bytes < scan_counts_scratch_bytes(copy.count)) {
    raise(Status::kInvalidInput, "scan of " + std::to_string(copy.count) +
                                     " counts got too little scratch memory (" +
                                     std::to_string(copy.scratch_bytes) + " bytes)");
  }
  scan(copy, stream);
}

void load_scan_counts() {
  constexpr int64_t kCount = 2;
  const size_t scratch_bytes = scan_counts_scratch_bytes(kCount);
  const size_t array_bytes = 256;  // counts 0-2, offsets 3-5 (int32)
  void* memory = nullptr;
  check_cuda(cudaMalloc(&memory, array_bytes + scratch_bytes), "cudaMalloc (scan_counts load)");
  cudaStream_t stream = nullptr;
  try {
    check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    auto* arrays = static_cast<int32_t*>(memory);
    check_cuda(cudaMemsetAsync(arrays, 0, array_bytes, stream), "cudaMemsetAsync");
    kernels::ScanCountsArgs args{};
    args.counts = arrays;
    args.offsets = arrays + 3;
    args.count = kCount;
    args.scratch = static_cast<char*>(memory) + array_bytes;
    args.scratch_bytes = scratch_bytes;
    scan(args, stream);
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize (scan_counts load)");
  } catch (...) {
    if (stream != nullptr) cudaStreamDestroy(stream);
    cudaFree(memory);
    throw;
  }
  cudaStreamDestroy(stream);
  cudaFree(memory);
}

}  // namespace memloom::cuda
