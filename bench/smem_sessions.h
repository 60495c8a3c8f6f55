// The MemFabric facades as a forked benchmark rank (bench_ranks.h) brings them up, shared by
// memloom-bench (shm, bm, trans on the emulated backend) and memloom-bench-gpu (the same copies
// between two GPUs), so both measure sessions set up alike. Each session is undone in reverse
// order when it goes; a failing call throws (check_smem), which the rank reports as its error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "bench/bench_ranks.h"
#include "smem/host/smem_bm.h"
#include "smem/host/smem_shm.h"
#include "smem/host/smem_trans.h"

namespace memloom::bench {

// Throws std::runtime_error("<what> failed (<code>): <smem_get_last_err_msg()>") unless code is 0.
void check_smem(int32_t code, const std::string& what);

// MemFabric's own default for its set-up and control waits; memloom-bench-gpu gives up sooner.
inline constexpr uint32_t kSmemTimeoutSeconds = 120;

// smem_init + smem_shm_init + smem_shm_create (MTE data path), `symmetric_size` bytes a rank.
class ShmSession {
 public:
  ShmSession(const RankInfo& info, uint64_t symmetric_size,
             uint32_t timeout_seconds = kSmemTimeoutSeconds);
  ~ShmSession();
  ShmSession(const ShmSession&) = delete;
  ShmSession& operator=(const ShmSession&) = delete;

  smem_shm_t handle() const { return handle_; }
  void barrier() const;
  // `rank`'s symmetric slot in this rank's global virtual address space.
  char* slot(int rank) const { return static_cast<char*>(gva_) + rank * stride_; }

 private:
  smem_shm_t handle_ = nullptr;
  void* gva_ = nullptr;
  uint64_t stride_ = 0;
};

// smem_init + smem_bm_init + smem_bm_create (SDMA) + smem_bm_join, `device_bytes` of device slot
// a rank.
class BmSession {
 public:
  BmSession(const RankInfo& info, uint64_t device_bytes,
            uint32_t timeout_seconds = kSmemTimeoutSeconds);
  ~BmSession();
  BmSession(const BmSession&) = delete;
  BmSession& operator=(const BmSession&) = delete;

  smem_bm_t handle() const { return handle_; }
  // `rank`'s device slot; throws when BM has none for it.
  char* device_slot(int rank) const;

 private:
  smem_bm_t handle_ = nullptr;
};

// One TRANS instance: smem_trans_init + smem_trans_create under `unique_id` ("IP:PORT").
// `device` is the GPU its memory lives on (smem_trans_config_t::deviceId); none keeps the
// default, as on the emulated backend.
class TransSession {
 public:
  TransSession(const RankInfo& info, smem_trans_role_t role, const std::string& unique_id,
               uint32_t timeout_seconds = kSmemTimeoutSeconds,
               std::optional<uint32_t> device = std::nullopt);
  ~TransSession();
  TransSession(const TransSession&) = delete;
  TransSession& operator=(const TransSession&) = delete;

  smem_trans_t handle() const { return handle_; }

 private:
  smem_trans_t handle_ = nullptr;
};

}  // namespace memloom::bench
