// Collectives over host memory made safe for device buffers. Groups with several ranks on one GPU
// cannot use NCCL (it refuses two ranks on one device) and use the emulated backend's collectives,
// which read and write their buffers with the CPU; callers such as the WholeMemory exchange pass
// device buffers. This wrapper copies a device send buffer to host memory before the call and the
// received bytes back to the device after it; host buffers go through untouched.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "hw/hal/collectives.h"

namespace memloom::cuda {

class HostStagedCollectives : public hal::Collectives {
 public:
  HostStagedCollectives(std::unique_ptr<hal::Collectives> inner, int device);
  ~HostStagedCollectives() override;
  HostStagedCollectives(const HostStagedCollectives&) = delete;
  HostStagedCollectives& operator=(const HostStagedCollectives&) = delete;

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  void barrier(Deadline deadline) override { inner_->barrier(deadline); }
  void broadcast(void* buffer, size_t bytes, int root, Deadline deadline) override;
  void allgather(const void* send, void* recv, size_t bytes, Deadline deadline) override;
  void allgatherv(const void* send, void* recv, const size_t* recv_counts,
                  const size_t* recv_displs, Deadline deadline) override;
  void alltoallv(const void* send, const size_t* send_counts, const size_t* send_displs, void* recv,
                 const size_t* recv_counts, const size_t* recv_displs, Deadline deadline) override;
  void abort(const std::string& reason) override { inner_->abort(reason); }

 private:
  // The host address to hand the inner collectives for `bytes` at `user` (staged into `host`
  // when `user` is device memory, copied in first when `copy_in`).
  const void* host_view(const void* user, size_t bytes, std::vector<char>& host, bool copy_in,
                        Deadline deadline);
  // Copies `bytes` of `host` to `user` when `user` is device memory (host_view staged it).
  void copy_back(void* user, const std::vector<char>& host, size_t bytes, Deadline deadline);
  void copy(void* to, const void* from, size_t bytes, Deadline deadline);

  std::unique_ptr<hal::Collectives> inner_;
  const int device_;
  cudaStream_t stream_ = nullptr;
};

}  // namespace memloom::cuda
