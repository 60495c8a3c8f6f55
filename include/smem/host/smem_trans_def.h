/*
 * memloom's MemFabric-compatible TRANS types (drop-in for MemFabric's smem/host/smem_trans_def.h).
 */
#ifndef __MEMFABRIC_SMEM_TRANS_DEF_H__
#define __MEMFABRIC_SMEM_TRANS_DEF_H__

#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

/* Same-directory include, so it resolves both as <smem/host/...> and with -I.../smem/host. */
#include "smem_bm_def.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A transfer instance created by smem_trans_create. */
typedef void* smem_trans_t;

/* What an instance does: a SENDER initiates reads and writes, a RECEIVER registers memory that
 * senders read and write, BOTH does both. */
typedef enum {
  SMEM_TRANS_NONE = 0,
  SMEM_TRANS_SENDER,
  SMEM_TRANS_RECEIVER,
  SMEM_TRANS_BOTH,
  SMEM_TRANS_BUTT
} smem_trans_role_t;

typedef struct {
  smem_trans_role_t role;          /* default SMEM_TRANS_SENDER */
  uint32_t initTimeout;            /* seconds; bounds every wait of the instance; default 120 */
  uint32_t deviceId;               /* device of this process; UINT32_MAX (default): current one */
  uint32_t flags;                  /* reserved, must be 0 */
  smem_bm_data_op_type dataOpType; /* data paths allowed (see smem_trans.h); 0: SDMA|HOST_TCP */
  bool startConfigServer;          /* start the config store at storeUrl in smem_trans_create */
} smem_trans_config_t;

#ifdef __cplusplus
}
#endif

#endif /* __MEMFABRIC_SMEM_TRANS_DEF_H__ */
