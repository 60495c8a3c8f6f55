#include "hw/cuda/cuda_platform.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>

#include "hw/cuda/cuda_check.h"
#include "hw/cuda/cuda_stream.h"
#include "hw/cuda/host_staged_collectives.h"
#include "hw/cuda/nccl_collectives.h"
#include "hw/cuda/staged_tcp_transport.h"
#include "hw/host/collectives_factory.h"
#include "memloom/error.h"
#include "src/base/hex.h"
#include "src/base/log.h"

namespace memloom::cuda {
namespace {

// The device this process works on: MEMLOOM_DEVICE (set by memloom-run), else the local rank
// spread over the visible GPUs, else GPU 0.
int initial_device(int count) {
  for (const char* variable : {"MEMLOOM_DEVICE", "MEMLOOM_LOCAL_RANK"}) {
    const char* value = std::getenv(variable);
    if (value == nullptr || *value == '\0') continue;
    char* end = nullptr;
    long number = std::strtol(value, &end, 10);
    if (*end != '\0' || number < 0) {
      raise(Status::kInvalidValue, std::string(variable) + "='" + value + "' is not a device");
    }
    if (std::string(variable) == "MEMLOOM_DEVICE" && number >= count) {
      raise(Status::kInvalidValue, "MEMLOOM_DEVICE=" + std::string(value) + " but only " +
                                       std::to_string(count) + " GPUs are visible");
    }
    return static_cast<int>(number % count);
  }
  return 0;
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
  set_current_device(initial_device(device_count_));
  memory_domain_ = std::make_unique<VmmMemoryDomain>(current_device_);
  MEMLOOM_LOG(kDebug, "CUDA backend: " << device_count_ << " GPUs, working on GPU "
                                       << current_device_.load());
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
    return std::make_unique<HostStagedCollectives>(
        host::create_collectives(group, bootstrap, deadline), current_device_);
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
    return std::make_unique<HostStagedCollectives>(
        host::create_collectives(group, bootstrap, deadline), current_device_);
  }
  return NcclCollectives::create(group, bootstrap, current_device_, deadline);
}

std::unique_ptr<hal::Transport> CudaPlatform::create_transport() {
  return std::make_unique<StagedTcpTransport>(current_device_);
}

}  // namespace memloom::cuda

// The entry point the core's platform loader looks up (dlsym) after loading this module.
extern "C" __attribute__((visibility("default"))) memloom::hal::Platform*
memloom_create_platform() {
  return new memloom::cuda::CudaPlatform();
}
