// Collectives over NCCL, for groups whose ranks each drive a different GPU (NCCL refuses two
// ranks of one communicator on one GPU; cuda_platform.cpp picks another path for those).
//
// The communicator is non-blocking (config.blocking = 0), so no NCCL call ever blocks the caller:
// every operation is issued, then polled (ncclCommGetAsyncError, cudaStreamQuery) against its
// deadline, the liveness of same-node peers and a poison mark in the bootstrap. On any failure the
// communicator is aborted, the object poisoned and the mark set, so peers stuck in the same
// collective give up promptly instead of at their own deadline.
//
// The HAL passes host (or device) pointers; data is staged through device buffers owned here,
// with pinned host buffers on the host side so every copy is asynchronous and bounded.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hw/hal/bootstrap.h"
#include "hw/hal/collectives.h"
#include "hw/host/collective_header.h"
#include "memloom/error.h"

namespace memloom::cuda {

class NcclCollectives : public hal::Collectives {
 public:
  // Collective over `group`: rank 0's NCCL unique id travels through `bootstrap`, which must
  // outlive the object. Works on `device`.
  static std::unique_ptr<NcclCollectives> create(const hal::GroupSpec& group,
                                                 hal::Bootstrap& bootstrap, int device,
                                                 Deadline deadline);
  ~NcclCollectives() override;
  NcclCollectives(const NcclCollectives&) = delete;
  NcclCollectives& operator=(const NcclCollectives&) = delete;

  int rank() const override { return group_.rank; }
  int size() const override { return group_.size; }

  void run(const hal::CollectiveCall& call, Deadline deadline) override;
  void abort(const std::string& reason) override;

 private:
  NcclCollectives(const hal::GroupSpec& group, hal::Bootstrap& bootstrap, int device);

  // A piece of the staged result: bytes at `offset` of both the device buffer and the user's.
  struct Piece {
    size_t offset;
    size_t bytes;
  };

  void check_usable();
  // Runs one operation: one at a time, on this object's device; failures other than
  // disagreeing arguments poison the group.
  template <typename Body>
  void guarded(Body&& body);
  // Every rank contributes `header` (the emulated backend's, so both backends judge arguments
  // alike); throws kInvalidInput on every rank when they disagree.
  void agree(host::CollectiveHeader header, Deadline deadline);
  void allgather_unchecked(const void* send, void* recv, size_t bytes, const char* what,
                           Deadline deadline);
  // The data phase of each operation once the ranks agreed on `call`: NCCL's own broadcast; the
  // allgatherv NCCL lacks, as one broadcast per contributing rank; alltoallv as sends and receives.
  void issue_broadcast(const hal::CollectiveCall& call, Deadline deadline);
  void issue_broadcasts_per_rank(const hal::CollectiveCall& call, Deadline deadline);
  void issue_sends_and_receives(const hal::CollectiveCall& call, Deadline deadline);
  // Checks the result of issuing an NCCL call; fails (and poisons) on error.
  void issued(ncclResult_t result, const char* call);
  // Enqueues a copy of [user, user+bytes) into the device send buffer.
  void stage_in(const void* user, size_t bytes);
  // Enqueues the copy of `pieces` of the device receive buffer towards `user` (extent: the end of
  // the last piece); finish_out() completes host destinations once the stream is done.
  void stage_out(void* user, size_t extent, const std::vector<Piece>& pieces);
  void finish_out();
  // Waits until NCCL has issued everything (kIssued) or, besides, the stream is idle
  // (kCompleted); fails (and poisons) on error, dead peer, poison mark or deadline.
  enum class Until { kIssued, kCompleted };
  void wait(const char* what, Deadline deadline, Until until);
  [[noreturn]] void fail(Status status, const std::string& message);
  void abort_communicator();
  // True when a same-node peer's process is gone; names it in `who`.
  bool peer_died(std::string* who) const;
  bool poison_marked(std::string* reason);

  const hal::GroupSpec group_;
  hal::Bootstrap& bootstrap_;
  const int device_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;

  std::thread aborter_;    // runs ncclCommAbort off the failing call's path
  bool in_group_ = false;  // between ncclGroupStart and ncclGroupEnd
  std::mutex op_mutex_;    // one operation at a time; abort() takes it to abort the communicator
  uint64_t next_seq_ = 0;  // collectives called so far (checked to be equal on all ranks)
  std::atomic<bool> poisoned_{false};
  std::mutex reason_mutex_;
  std::string poison_reason_;

  struct Buffer {
    void* data = nullptr;
    size_t size = 0;
  };
  void grow(Buffer& buffer, size_t bytes, bool pinned_host);
  Buffer device_send_, device_recv_, host_send_, host_recv_;
  int32_t* barrier_word_ = nullptr;  // device memory for the barrier's all-reduce

  // The pending host-side part of stage_out.
  void* out_user_ = nullptr;
  std::vector<Piece> out_pieces_;
};

}  // namespace memloom::cuda
