#include "hw/cuda/cuda_platform.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>

#include "hw/cuda/cuda_buffer_staging.h"
#include "hw/cuda/cuda_check.h"
#include "hw/cuda/cuda_count_scan.h"
#include "hw/cuda/cuda_row_grouping.h"
#include "hw/cuda/cuda_stream.h"
#include "hw/cuda/nccl_collectives.h"
#include "hw/host/collectives_factory.h"
#include "hw/host/device_choice.h"
#include "hw/host/transport_support.h"
#include "hw/host/ucx_capabilities.h"
#include "hw/host/ucx_transport.h"
#include "memloom/error.h"
#include "src/base/environment.h"
#include "src/base/hex.h"
#include "src/base/log.h"

namespace memloom::cuda {
namespace {

// The device the calling thread chose, -1 when it chose none. cudaGetDevice cannot tell: on a
// thread that never chose it answers 0. cudaSetDevice makes the device's primary context current
// on the thread, so the thread's current driver context says which device it chose (seen on an
// H200 with CUDA 13: none on a fresh thread, none after cudaGetDevice, the device after
// cudaSetDevice). Other runtime calls on a thread without a context bind one too, so memloom's
// own calls go through DeviceGuard, which puts the thread's context back.
int thread_device() {
  CUcontext context = nullptr;
  if (cuCtxGetCurrent(&context) != CUDA_SUCCESS || context == nullptr) return -1;
  CUdevice device = 0;
  if (cuCtxGetDevice(&device) != CUDA_SUCCESS) return -1;
  return static_cast<int>(device);
}

// The real host (not MEMLOOM_NODE): NCCL's duplicate-GPU rule is about physical GPUs, and
// emulated nodes of one machine share them.
std::string physical_host() {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  std::string boot_id;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot_id;
  return std::string(name) + "#" + boot_id;
}

}  // namespace

CudaPlatform::CudaPlatform() {
  CUresult result = cuInit(0);
  if (result != CUDA_SUCCESS) {
    raise(Status::kNotSupported, "no usable CUDA driver (cuInit: " + describe_cu(result) + ")");
  }
  check_cu(cuDeviceGetCount(&device_count_), "cuDeviceGetCount");
  if (device_count_ == 0) raise(Status::kNotSupported, "the CUDA driver sees no GPU");
  // NVLink SHARP multicast can put a shared host's GPUs out of service; NCCL uses it only when
  // the user asks for it explicitly.
  ::setenv("NCCL_NVLS_ENABLE", "0", 0);
  // memloom makes and destroys many communicators in one process (one per WholeMemory
  // communicator, SHM and BM object). With NCCL's cuMem buffers (exchanged as file descriptors
  // over its proxy's Unix sockets) that pattern was seen, on 2x H200 with NCCL 2.28 and 12 tests at
  // once, to hang a new communicator's first collective, to fail communicator creation with proxy
  // socket errors, and to block ncclCommDestroy in cuMemRelease; NCCL issue #2379 reports the
  // same family of hangs and that NCCL_CUMEM_ENABLE=0 avoids it. Legacy cudaMalloc buffers with
  // CUDA IPC serve NCCL here unless the user asks otherwise.
  ::setenv("NCCL_CUMEM_ENABLE", "0", 0);
  for (int device = 0; device < device_count_; ++device) {
    CUdevice handle;
    size_t bytes = 0;
    check_cu(cuDeviceGet(&handle, device), "cuDeviceGet");
    check_cu(cuDeviceTotalMem(&bytes, handle), "cuDeviceTotalMem");
    capacities_.push_back(bytes);
  }
  const auto choice =
      host::choose_device(base::Environment::read(), device_count_, thread_device(), "GPUs");
  device_fixed_ = choice.fixed;
  set_current_device(choice.device);
  memory_domain_ = std::make_unique<VmmMemoryDomain>(current_device_);
  MEMLOOM_LOG(kDebug, "CUDA backend: " << device_count_ << " GPUs, working on GPU "
                                       << current_device_.load() << ", chosen by "
                                       << choice.reason);
}

void CudaPlatform::follow_caller_device() {
  if (device_fixed_) return;
  const int device = thread_device();
  if (device < 0 || device >= device_count_ || device == current_device_) return;
  MEMLOOM_LOG(kDebug, "CUDA backend: working on GPU " << device << " instead of GPU "
                                                      << current_device_.load()
                                                      << ": the calling thread's current device");
  set_current_device(device);
}

const void* CudaPlatform::native_device_properties(int device) {
  if (device == -1) device = current_device_;
  check_device(device, "native_device_properties");
  std::lock_guard<std::mutex> lock(properties_mutex_);
  auto& properties = properties_[device];
  if (!properties) {
    auto fresh = std::make_unique<cudaDeviceProp>();
    check_cuda(cudaGetDeviceProperties(fresh.get(), device), "cudaGetDeviceProperties");
    properties = std::move(fresh);
  }
  return properties.get();
}

std::optional<hal::PeerAccess> CudaPlatform::peer_access(int from, int to) {
  check_device(from, "peer_access");
  check_device(to, "peer_access");
  MEMLOOM_CHECK_ARG(from != to, "peer_access: a device is not its own peer");
  hal::PeerAccess access;
  int value = 0;
  check_cuda(cudaDeviceCanAccessPeer(&value, from, to), "cudaDeviceCanAccessPeer");
  access.accessible = value != 0;
  if (!access.accessible) return access;
  check_cuda(cudaDeviceGetP2PAttribute(&value, cudaDevP2PAttrPerformanceRank, from, to),
             "cudaDeviceGetP2PAttribute(cudaDevP2PAttrPerformanceRank)");
  access.performance_rank = value;
  check_cuda(cudaDeviceGetP2PAttribute(&value, cudaDevP2PAttrNativeAtomicSupported, from, to),
             "cudaDeviceGetP2PAttribute(cudaDevP2PAttrNativeAtomicSupported)");
  access.native_atomics = value != 0;
  return access;
}

CudaPlatform::~CudaPlatform() = default;

void CudaPlatform::check_device(int device, const char* what) const {
  if (device < 0 || device >= device_count_) {
    raise(Status::kInvalidInput, std::string(what) + ": device " + std::to_string(device) +
                                     " does not exist (" + std::to_string(device_count_) +
                                     " GPUs visible)");
  }
}

size_t CudaPlatform::device_capacity(int device) const {
  check_device(device, "device_capacity");
  return capacities_[device];
}

void CudaPlatform::set_current_device(int device) {
  check_device(device, "set_current_device");
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  current_device_ = device;
}

size_t CudaPlatform::kernel_scratch_bytes(hal::KernelId id, size_t work_items) const {
  const auto items = static_cast<int64_t>(work_items);
  if (id == hal::KernelId::kGroupRows) {
    DeviceGuard guard(current_device_);
    return group_rows_scratch_bytes(items);
  }
  if (id == hal::KernelId::kScanCounts) {
    DeviceGuard guard(current_device_);
    return scan_counts_scratch_bytes(items);
  }
  return 0;
}

std::unique_ptr<hal::Stream> CudaPlatform::create_stream(int device) {
  check_device(device, "create_stream");
  return std::make_unique<CudaStream>(device);
}

std::unique_ptr<hal::Stream> CudaPlatform::adopt_stream(void* native_handle) {
  auto stream = static_cast<cudaStream_t>(native_handle);
  int device = current_device_;
  // The legacy default stream (null) belongs to whichever device is current.
  if (stream != nullptr) check_cuda(cudaStreamGetDevice(stream, &device), "cudaStreamGetDevice");
  return std::make_unique<CudaStream>(device, stream);
}

std::string CudaPlatform::gpu_identity() const {
  CUdevice handle;
  CUuuid uuid{};
  check_cu(cuDeviceGet(&handle, current_device_), "cuDeviceGet");
  check_cu(cuDeviceGetUuid(&uuid, handle), "cuDeviceGetUuid");
  return physical_host() + "/" + base::hex_bytes(uuid.bytes, sizeof(uuid.bytes));
}

std::unique_ptr<hal::Collectives> CudaPlatform::create_collectives(const hal::GroupSpec& group,
                                                                   hal::Bootstrap& bootstrap,
                                                                   Deadline deadline) {
  MEMLOOM_CHECK_ARG(group.size > 0 && group.rank >= 0 && group.rank < group.size,
                    "create_collectives: rank " + std::to_string(group.rank) +
                        " is not in a group of " + std::to_string(group.size));
  // SHM and BM objects and MemFabric worlds exchange only control messages: host-memory
  // collectives serve them without an NCCL communicator per object, which costs GPU memory, a
  // second or more to create, and, made and destroyed by the dozen in one process, was seen to
  // hang NCCL's initialisation (2x H200, NCCL 2.28).
  if (group.control_only) {
    return host::create_collectives(group, bootstrap, deadline,
                                    std::make_unique<CudaBufferStaging>(current_device_));
  }
  // NCCL refuses a communicator with two ranks on one GPU. Such groups (several ranks per GPU)
  // use the emulated backend's collectives over host memory instead, with device buffers staged
  // through host memory; every rank sees the same identities, so every rank makes the same choice.
  bootstrap.put("cuda/gpu/" + std::to_string(group.rank), gpu_identity());
  std::set<std::string> distinct;
  for (int r = 0; r < group.size; ++r) {
    distinct.insert(bootstrap.wait_get("cuda/gpu/" + std::to_string(r), deadline));
  }
  if (distinct.size() < static_cast<size_t>(group.size)) {
    MEMLOOM_LOG(kDebug, "group of " << group.size << " ranks on " << distinct.size()
                                    << " GPUs: host-memory collectives instead of NCCL");
    return host::create_collectives(group, bootstrap, deadline,
                                    std::make_unique<CudaBufferStaging>(current_device_));
  }
  return NcclCollectives::create(group, bootstrap, current_device_, deadline);
}

std::unique_ptr<hal::Transport> CudaPlatform::create_transport(
    const hal::TransportOptions& options) {
  // Where UCX moves device memory itself (built with CUDA: cuda_copy, GPUDirect RDMA) it registers
  // it; without that, device memory is staged through page-locked host buffers on both sides and
  // moves on UCX's am data path (exposed device memory has no remote key: ucx_transport.h).
  if (host::ucx_supports_cuda_memory()) {
    MEMLOOM_LOG(kDebug, "transport: UCX (this UCX registers CUDA memory)");
    return std::make_unique<host::UcxTransport>(options);
  }
  MEMLOOM_LOG(kDebug,
              "transport: UCX (this UCX has no CUDA memory support: device memory staged "
              "through host buffers, on the am data path)");
  return std::make_unique<host::UcxTransport>(options,
                                              std::make_unique<CudaBufferStaging>(current_device_));
}

hal::TransportSupport CudaPlatform::transport_support() {
  return host::transport_support();
}

}  // namespace memloom::cuda

// The entry point the core's platform loader looks up (dlsym) after loading this module.
extern "C" __attribute__((visibility("default"))) memloom::hal::Platform*
memloom_create_platform() {
  return new memloom::cuda::CudaPlatform();
}
