/*
 * memloom's MemFabric-compatible SHM (symmetric memory) types: drop-in for MemFabric's
 * smem/host/smem_shm_def.h. Names, fields and values follow the published header.
 */
#ifndef __MEMFABRIC_SMEM_SHM_DEF_H__
#define __MEMFABRIC_SMEM_SHM_DEF_H__

#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef void* smem_shm_t;

#define SMEM_SHM_TIMEOUT_MAX UINT32_MAX /* every timeout is <= UINT32_MAX seconds */

/* Limits checked by smem_shm_create (memloom: checked before anything is allocated). */
#define SMEM_SHM_ID_MAX 63                        /* ids are 0 .. 63 */
#define SMEM_SHM_RANK_SIZE_MAX 1024               /* ranks per shm object */
#define SMEM_SHM_SYMMETRIC_SIZE_MAX (64ULL << 30) /* bytes per rank */

/* The extra context of smem_shm_set_extra_context: at most this many bytes per rank. */
#define SMEM_SHM_EXTRA_CONTEXT_SIZE_MAX (64U * 1024U)

/* memloom: every rank's extra context lives in a block of this many bytes just below the GVA:
 * rank r's context starts at (char *)gva - (rankSize - r) * SMEM_SHM_EXTRA_CONTEXT_STRIDE and its
 * size (uint32_t) is stored SMEM_SHM_EXTRA_CONTEXT_SIZE_MAX bytes after that start. The blocks
 * of every same-node rank are mapped in every process of the node, like the symmetric slots. */
#define SMEM_SHM_EXTRA_CONTEXT_STRIDE (2ULL << 20)

/* smem_shm_atomic_alloc_value hands out numbers below limit <= this. */
#define SMEM_SHM_ATOMIC_NUM_LIMIT 1024U

/**
 * @brief Data operations a kernel can use on symmetric memory (a bit set).
 * MTE: load/store through the mapped GVA; SDMA: copy engines; RDMA: network (not on emulated).
 */
typedef enum {
  SMEMS_DATA_OP_MTE = 1U << 0,
  SMEMS_DATA_OP_SDMA = 1U << 1,
  SMEMS_DATA_OP_RDMA = 1U << 2,
} smem_shm_data_op_type;

/**
 * shm config; every timeout is in seconds, default 120, range [1, SMEM_SHM_TIMEOUT_MAX].
 * controlOperationTimeout bounds barrier, allgather and every other call that waits on peers.
 */
typedef struct {
  uint32_t shmInitTimeout;          /* smem_shm_init */
  uint32_t shmCreateTimeout;        /* smem_shm_create */
  uint32_t controlOperationTimeout; /* barrier, allgather, sub-group calls, atomic values */
  bool startConfigStoreServer; /* rank 0 starts the config store at the init URL (default true) */
  uint32_t flags;              /* reserved, default 0 */
} smem_shm_config_t;

#ifdef __cplusplus
}
#endif

#endif /* __MEMFABRIC_SMEM_SHM_DEF_H__ */
