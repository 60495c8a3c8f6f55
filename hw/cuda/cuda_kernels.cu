#include "hw/cuda/cuda_kernels.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <type_traits>

#include "hw/cuda/cuda_check.h"
#include "memloom/error.h"
#include "src/ops/fill_kernel.h"
#include "src/ops/row_copy_kernel.h"

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

int max_blocks() {
  int device = 0, multiprocessors = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  check_cuda(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device),
             "cudaDeviceGetAttribute(multiprocessors)");
  return std::max(1, multiprocessors * kBlocksPerMultiprocessor);
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

struct CudaKernel {
  const char* name;
  size_t args_size;
  void (*launch)(const void* args, size_t items, cudaStream_t stream);
  void (*load)();
};

template <class Kernel>
constexpr CudaKernel make_cuda_kernel(const char* name) {
  return CudaKernel{name, sizeof(typename Kernel::Args), &launch_of<Kernel>, &load_of<Kernel>};
}

// Indexed by KernelId; the static_assert keeps it in step with hw/hal/kernels.h.
constexpr std::array<CudaKernel, static_cast<size_t>(hal::KernelId::kCount)> kKernels = {
    make_cuda_kernel<ops::FillPatternKernel>("fill_pattern"),
    make_cuda_kernel<ops::GatherKernel>("gather"),
    make_cuda_kernel<ops::ScatterKernel>("scatter"),
};
static_assert(kKernels.size() == static_cast<size_t>(hal::KernelId::kCount),
              "every KernelId needs a CUDA launcher");

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
  kernel.launch(launch.args, launch.work_items, stream);
}

}  // namespace memloom::cuda
