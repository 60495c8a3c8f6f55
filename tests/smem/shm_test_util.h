// SHM test helpers: init with short timeouts, and a scoped object.
#pragma once

#include "smem/host/smem_shm.h"
#include "tests/smem/smem_test_util.h"

namespace memloom::testing {

inline smem_shm_config_t shm_test_config(uint32_t control_timeout_s = 20) {
  smem_shm_config_t config;
  smem_shm_config_init(&config);
  config.startConfigStoreServer = false;  // run_ranks provides the store
  config.shmInitTimeout = 30;
  config.shmCreateTimeout = 30;
  config.controlOperationTimeout = control_timeout_s;
  return config;
}

// smem_shm_init for a run_ranks child (device = local rank).
inline int32_t shm_init_rank(const RankContext& ctx, uint32_t control_timeout_s = 20) {
  smem_shm_config_t config = shm_test_config(control_timeout_s);
  return smem_shm_init(ctx.store_url.c_str(), static_cast<uint32_t>(ctx.world_size),
                       static_cast<uint32_t>(ctx.rank), static_cast<uint16_t>(ctx.device()),
                       &config);
}

}  // namespace memloom::testing
