// The CUDA backend's Platform: VMM memory (vmm_memory_domain.h), CUDA streams (cuda_stream.h),
// NCCL collectives (nccl_collectives.h) and the UCX transport (hw/host/ucx_transport.h), which
// stages device memory through host buffers where UCX has no CUDA support.
// Created by the module's entry point, memloom_create_platform, which the core dlopens.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hw/cuda/vmm_memory_domain.h"
#include "hw/hal/platform.h"

namespace memloom::cuda {

class CudaPlatform : public hal::Platform {
 public:
  // Throws kNotSupported at once when no driver or no GPU is present (cuInit fails or finds 0
  // devices), so the loader falls back to the emulated backend.
  CudaPlatform();
  ~CudaPlatform() override;

  std::string name() const override { return "cuda"; }
  // Kernels run as warps of 32 threads in lockstep.
  hal::Capabilities capabilities() const override {
    hal::Capabilities capabilities;
    capabilities.lockstep_kernel_threads = true;
    capabilities.peer_links = true;
    return capabilities;
  }
  int device_count() const override { return device_count_; }
  size_t device_capacity(int device) const override;
  void set_current_device(int device) override;
  int current_device() const override { return current_device_; }
  void follow_caller_device() override;
  const void* native_device_properties(int device) override;
  std::optional<hal::PeerAccess> peer_access(int from, int to) override;
  size_t kernel_scratch_bytes(hal::KernelId id, size_t work_items) const override;

  hal::MemoryDomain& memory_domain() override { return *memory_domain_; }
  std::unique_ptr<hal::Stream> create_stream(int device) override;
  std::unique_ptr<hal::Stream> adopt_stream(void* native_handle) override;
  std::unique_ptr<hal::Collectives> create_collectives(const hal::GroupSpec& group,
                                                       hal::Bootstrap& bootstrap,
                                                       Deadline deadline) override;
  using hal::Platform::create_transport;
  std::unique_ptr<hal::Transport> create_transport(const hal::TransportOptions& options) override;
  hal::TransportSupport transport_support() override;

 private:
  void check_device(int device, const char* what) const;
  // "<host identity>/<GPU UUID>" of the current device: equal for two ranks on one GPU.
  std::string gpu_identity() const;

  int device_count_ = 0;
  std::vector<size_t> capacities_;
  std::atomic<int> current_device_{0};
  bool device_fixed_ = false;  // MEMLOOM_DEVICE or MEMLOOM_LOCAL_RANK chose it
  std::mutex properties_mutex_;
  std::map<int, std::unique_ptr<cudaDeviceProp>> properties_;
  std::unique_ptr<VmmMemoryDomain> memory_domain_;
};

}  // namespace memloom::cuda
