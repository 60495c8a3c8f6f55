// BM test helpers: init with short timeouts, and the node of a rank in run_ranks' layout.
#pragma once

#include "smem/host/smem_bm.h"
#include "tests/smem/smem_test_util.h"

namespace memloom::testing {

inline constexpr uint64_t kSlot = 2 * kMiB;  // a multiple of every backend's granularity

inline smem_bm_config_t bm_test_config(uint32_t control_timeout_s = 20) {
  smem_bm_config_t config;
  smem_bm_config_init(&config);
  config.startConfigStoreServer = false;  // run_ranks provides the store
  config.initTimeout = 30;
  config.createTimeout = 30;
  config.controlOperationTimeout = control_timeout_s;
  // Tests choose their ranks (MemFabric's default is auto ranking, rankId UINT16_MAX).
  config.autoRanking = false;
  config.rankId = 0;
  return config;
}

inline int32_t bm_init_rank(const RankContext& ctx, uint32_t control_timeout_s = 20) {
  smem_bm_config_t config = bm_test_config(control_timeout_s);
  config.rankId = static_cast<uint16_t>(ctx.rank);
  config.autoRanking = false;
  return smem_bm_init(ctx.store_url.c_str(), static_cast<uint32_t>(ctx.world_size),
                      static_cast<uint16_t>(ctx.device()), &config);
}

// run_ranks deals ranks to nodes in contiguous blocks.
inline int node_of(int rank, int world, int nodes) {
  return rank * nodes / world;
}

inline int32_t bm_copy(smem_bm_t bm, const void* src, void* dst, size_t bytes,
                       smem_bm_copy_type type, uint32_t flags = 0) {
  smem_copy_params params{src, dst, bytes};
  return smem_bm_copy(bm, &params, type, flags);
}

inline char* device_slot(smem_bm_t bm, int rank) {
  return static_cast<char*>(
      smem_bm_ptr_by_mem_type(bm, SMEM_MEM_TYPE_DEVICE, static_cast<uint16_t>(rank)));
}
inline char* host_slot(smem_bm_t bm, int rank) {
  return static_cast<char*>(
      smem_bm_ptr_by_mem_type(bm, SMEM_MEM_TYPE_HOST, static_cast<uint16_t>(rank)));
}

}  // namespace memloom::testing
