#include "hw/cuda/cuda_kernels.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <type_traits>

#include "hw/cuda/cuda_check.h"
#include "hw/cuda/cuda_count_scan.h"
#include "hw/cuda/cuda_optimizer_apply.h"
#include "hw/cuda/cuda_phase_times.h"
#include "hw/cuda/cuda_row_grouping.h"
#include "hw/cuda/cuda_sampling.h"
#include "memloom/error.h"
#include "src/kernels/count_scan_kernel.h"
#include "src/kernels/fill_kernel.h"
#include "src/kernels/optimizer_kernel.h"
#include "src/kernels/owner_routing_kernel.h"
#include "src/kernels/row_copy_kernel.h"
#include "src/kernels/row_grouping_kernel.h"
#include "src/kernels/sampling_kernel.h"

namespace memloom::cuda {
namespace {

constexpr unsigned kThreadsPerBlock = 256;
constexpr int kBlocksPerMultiprocessor = 8;

// A grid-stride loop: any grid size covers any item count, so the grid is sized to fill the GPU,
// not to the problem.
template <class Kernel>
__global__ void grid_of(typename Kernel::Args args, size_t items) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < items;
       i += stride) {
    Kernel::body(args, i);
  }
}

int max_blocks(int blocks_per_multiprocessor = kBlocksPerMultiprocessor) {
  int device = 0, multiprocessors = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  check_cuda(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device),
             "cudaDeviceGetAttribute(multiprocessors)");
  return std::max(1, multiprocessors * blocks_per_multiprocessor);
}

template <class Kernel>
void launch_of(const void* args, size_t items, cudaStream_t stream) {
  using Args = typename Kernel::Args;
  static_assert(std::is_trivially_copyable_v<Args>, "kernel arguments travel by value");
  Args copy;
  std::memcpy(&copy, args, sizeof(Args));  // the caller's pointer may be unaligned
  const size_t wanted = (items + kThreadsPerBlock - 1) / kThreadsPerBlock;
  const auto blocks = static_cast<unsigned>(std::min<size_t>(wanted, max_blocks()));
  grid_of<Kernel><<<blocks, kThreadsPerBlock, 0, stream>>>(copy, items);
  check_cuda(cudaGetLastError(), "kernel launch");
}

// Loading a kernel's module (CUDA loads lazily, at the first launch) waits for work already
// queued on the device; behind a stream held by a host function that would stall the launching
// thread, so streams load the table when they are created.
template <class Kernel>
void load_of() {
  cudaFuncAttributes attributes{};
  check_cuda(cudaFuncGetAttributes(&attributes, grid_of<Kernel>), "cudaFuncGetAttributes");
}

// Gathers and scatters between tables of one element type: a warp per row, kRowsPerWarp rows at
// once. The per-item body (grid_of) spends most of a 16-byte item on finding its row (a division,
// the index load, the layouts) and keeps one load in flight per thread; here the lanes share one
// index load and one address computation per row and each lane keeps kRowsPerWarp 16-byte loads
// in flight. Measured on an H200, 1M random 512-byte rows: 0.91-0.93x of the device-to-device
// copy bandwidth for the bare kernel, against 0.80-0.92x for one item per thread, and 0.96x of
// the NVLink estimate with half the rows on the peer GPU. Rows that are not 16-byte aligned on
// both sides, or that straddle two chunks, go through the per-item body's copy, split over lanes.
constexpr int kLanes = 32;
constexpr int kRowsPerWarp = 4;
constexpr size_t kVectorBytes = sizeof(uint4);
// At most 64 registers a thread, so that 4 blocks (1024 threads) fit on a multiprocessor.
constexpr int kMinBlocksPerMultiprocessor = 4;

template <bool kIndexedSource>
__global__ void __launch_bounds__(kThreadsPerBlock, kMinBlocksPerMultiprocessor)
    copy_rows_by_warps(kernels::RowCopyArgs args) {
  using Copy = kernels::IndexedRowCopy<kIndexedSource>;
  const unsigned lane = threadIdx.x % kLanes;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kLanes;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * blockDim.x / kLanes;
  const kernels::RowBytes source = kernels::row_bytes_of(args.source);
  const kernels::RowBytes destination = kernels::row_bytes_of(args.destination);
  const size_t row_length = static_cast<size_t>(args.columns) * source.element;
  const int64_t vectors =
      row_length % kVectorBytes == 0 ? static_cast<int64_t>(row_length / kVectorBytes) : 0;
  for (int64_t first = warp * kRowsPerWarp; first < args.rows; first += warps * kRowsPerWarp) {
    // Lane u loads the index of row first + u and records it if it is past the table (once).
    int64_t my_index = -1;
    if (lane < kRowsPerWarp && first + lane < args.rows) {
      const int64_t index = kernels::load_index(args, first + lane);
      if (Copy::follow(args, index)) my_index = index;
    }
    const char* from[kRowsPerWarp];
    char* to[kRowsPerWarp];
#pragma unroll
    for (int u = 0; u < kRowsPerWarp; ++u) {
      const int64_t index = __shfl_sync(0xffffffffu, my_index, u);
      const int64_t row = first + u;
      from[u] = nullptr;
      to[u] = nullptr;
      if (index < 0) continue;
      const int64_t source_row = kIndexedSource ? index : row;
      const int64_t destination_row = kIndexedSource ? row : index;
      const char* start = kernels::whole_row_start(args.source, source, source_row, row_length);
      char* target =
          kernels::whole_row_start(args.destination, destination, destination_row, row_length);
      const auto alignment =
          reinterpret_cast<uintptr_t>(start) | reinterpret_cast<uintptr_t>(target);
      if (vectors > 0 && start != nullptr && target != nullptr && alignment % kVectorBytes == 0) {
        from[u] = start;
        to[u] = target;
        continue;
      }
      for (int64_t part = lane; part < args.chunks_per_row; part += kLanes) {
        const int64_t begin = part * args.chunk_columns;
        const int64_t count =
            args.columns - begin < args.chunk_columns ? args.columns - begin : args.chunk_columns;
        const auto column_byte = static_cast<size_t>(begin) * source.element;
        kernels::copy_bytes(
            kernels::row_address(args.destination, destination, destination_row, column_byte),
            kernels::row_address(args.source, source, source_row, column_byte),
            static_cast<size_t>(count) * source.element);
      }
    }
    for (int64_t vector = lane; vector < vectors; vector += kLanes) {
      const size_t at = static_cast<size_t>(vector) * kVectorBytes;
      uint4 value[kRowsPerWarp];
#pragma unroll
      for (int u = 0; u < kRowsPerWarp; ++u) {
        if (from[u] != nullptr) value[u] = *reinterpret_cast<const uint4*>(from[u] + at);
      }
#pragma unroll
      for (int u = 0; u < kRowsPerWarp; ++u) {
        if (to[u] != nullptr) *reinterpret_cast<uint4*>(to[u] + at) = value[u];
      }
    }
  }
}

// Same element type on both sides: the warp kernel; a conversion: the per-item body.
template <bool kIndexedSource>
void launch_row_copy(const void* args, size_t items, cudaStream_t stream) {
  kernels::RowCopyArgs copy;
  std::memcpy(&copy, args, sizeof(copy));
  if (copy.source.dtype != copy.destination.dtype) {
    launch_of<kernels::IndexedRowCopy<kIndexedSource>>(args, items, stream);
    return;
  }
  const size_t rows_per_block = kThreadsPerBlock / kLanes * kRowsPerWarp;
  const size_t wanted = (static_cast<size_t>(copy.rows) + rows_per_block - 1) / rows_per_block;
  // One wave of resident blocks; the grid-stride loop covers the rest.
  const auto blocks =
      static_cast<unsigned>(std::min<size_t>(wanted, max_blocks(kMinBlocksPerMultiprocessor)));
  copy_rows_by_warps<kIndexedSource><<<blocks, kThreadsPerBlock, 0, stream>>>(copy);
  check_cuda(cudaGetLastError(), "kernel launch");
}

template <bool kIndexedSource>
void load_row_copy() {
  load_of<kernels::IndexedRowCopy<kIndexedSource>>();
  cudaFuncAttributes attributes{};
  check_cuda(cudaFuncGetAttributes(&attributes, copy_rows_by_warps<kIndexedSource>),
             "cudaFuncGetAttributes");
}

struct CudaKernel {
  const char* name;
  size_t args_size;
  void (*launch)(const void* args, size_t items, cudaStream_t stream);
  void (*load)();
};

// The optimizer's element update (with or without lazy Adam's row-state advance) runs as a warp
// per row (cuda_optimizer_apply.cu); the advance alone, one item per row, through the per-item
// body.
void launch_optimizer_apply(const void* args, size_t items, cudaStream_t stream) {
  kernels::OptimizerApplyArgs copy;
  std::memcpy(&copy, args, sizeof(copy));
  if (copy.phase != kernels::OptimizerPhase::kAdvanceRowState) {
    PhaseTimer timer("optimizer_apply.update_rows", stream);
    launch_optimizer_rows(copy, stream);
  } else {
    PhaseTimer timer("optimizer_apply.advance_row_state", stream);
    launch_of<kernels::OptimizerApplyKernel>(args, items, stream);
  }
}

void load_optimizer_apply() {
  load_of<kernels::OptimizerApplyKernel>();
  load_optimizer_rows();
}

// Unweighted sampling of up to 32 samples a centre runs as a warp per 32 centres
// (cuda_sampling.cu); the rest (weighted, larger fanouts) through the per-item body.
void launch_sample_neighbours(const void* args, size_t items, cudaStream_t stream) {
  kernels::SampleArgs copy;
  std::memcpy(&copy, args, sizeof(copy));
  if (samples_by_warps(copy)) {
    launch_sample_by_warps(copy, stream, max_blocks());
  } else {
    launch_of<kernels::SampleNeighboursKernel>(args, items, stream);
  }
}

void load_sample_neighbours() {
  load_of<kernels::SampleNeighboursKernel>();
  load_sample_by_warps();
}

template <class Kernel>
constexpr CudaKernel make_cuda_kernel(const char* name) {
  return CudaKernel{name, sizeof(typename Kernel::Args), &launch_of<Kernel>, &load_of<Kernel>};
}

// Indexed by KernelId; the static_assert keeps it in step with hw/hal/kernels.h.
constexpr std::array<CudaKernel, static_cast<size_t>(hal::KernelId::kCount)> kKernels = {
    make_cuda_kernel<kernels::FillPatternKernel>("fill_pattern"),
    CudaKernel{"gather", sizeof(kernels::RowCopyArgs), &launch_row_copy<true>,
               &load_row_copy<true>},
    CudaKernel{"scatter", sizeof(kernels::RowCopyArgs), &launch_row_copy<false>,
               &load_row_copy<false>},
    make_cuda_kernel<kernels::CountByOwner>("count_by_owner"),
    make_cuda_kernel<kernels::PlaceByOwner>("place_by_owner"),
    CudaKernel{"optimizer_apply", sizeof(kernels::OptimizerApplyArgs), &launch_optimizer_apply,
               &load_optimizer_apply},
    make_cuda_kernel<kernels::SampleCountKernel>("sample_count"),
    CudaKernel{"sample_neighbours", sizeof(kernels::SampleArgs), &launch_sample_neighbours,
               &load_sample_neighbours},
    make_cuda_kernel<kernels::SelfLoopKernel>("add_self_loop"),
    make_cuda_kernel<kernels::IndexRequestsKernel>("index_requests"),
    CudaKernel{"group_rows", sizeof(kernels::GroupRowsArgs), &launch_group_rows, &load_group_rows},
    CudaKernel{"scan_counts", sizeof(kernels::ScanCountsArgs), &launch_scan_counts,
               &load_scan_counts},
};
// The array's size is fixed by its type, so a missing entry would be a zero one (null launcher
// and loader: the first stream crashed calling it). Every entry must be filled in.
constexpr bool every_kernel_filled() {
  for (const CudaKernel& kernel : kKernels) {
    if (kernel.name == nullptr || kernel.launch == nullptr || kernel.load == nullptr) return false;
  }
  return true;
}
static_assert(every_kernel_filled(), "every KernelId needs a CUDA launcher and loader");

}  // namespace

void load_kernels() {
  for (const CudaKernel& kernel : kKernels) kernel.load();
}

void launch_kernel(const hal::KernelLaunch& launch, cudaStream_t stream) {
  const auto index = static_cast<size_t>(launch.id);
  if (index >= kKernels.size()) {
    raise(Status::kInvalidInput, "unknown kernel id " + std::to_string(index) + " (the table has " +
                                     std::to_string(kKernels.size()) + " kernels)");
  }
  const CudaKernel& kernel = kKernels[index];
  if (launch.args == nullptr || launch.args_size != kernel.args_size) {
    raise(Status::kInvalidInput,
          std::string("kernel ") + kernel.name + " takes " + std::to_string(kernel.args_size) +
              " bytes of arguments, got " + std::to_string(launch.args_size));
  }
  if (launch.work_items == 0) return;
  PhaseTimer timer(kernel.name, stream);
  kernel.launch(launch.args, launch.work_items, stream);
}

}  // namespace memloom::cuda
