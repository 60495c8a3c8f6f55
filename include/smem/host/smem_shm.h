/*
 * memloom's MemFabric-compatible SHM (symmetric memory) API: drop-in for MemFabric's
 * smem/host/smem_shm.h.
 *
 * Every rank of a shm object contributes symmetricSize bytes of device memory. On each node the
 * slots of all same-node ranks are mapped in one global virtual address (GVA) range whose base is
 * the same in every process, so (char *)gva + r * symmetricSize is rank r's slot everywhere on the
 * node. Barrier and allgather run over the backend's collectives (shared-memory atomics inside a
 * node), each bounded by the config's controlOperationTimeout.
 *
 * int32_t functions return 0 (SMEM_SUCCESS) or a negative SMEM_* code; functions returning a handle
 * or a value return NULL / UINT32_MAX on failure. smem_get_last_err_msg() explains every failure.
 */
#ifndef __MEMFABRIC_SMEM_SHM_H__
#define __MEMFABRIC_SMEM_SHM_H__

#include "smem.h"
#include "smem_shm_def.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sets every field of config to its default (timeouts 120 s, startConfigStoreServer true). */
int32_t smem_shm_config_init(smem_shm_config_t* config);

/* Joins the world of worldSize (<= SMEM_WORLD_SIZE_MAX) processes through the config store at
 * configStoreIpPort ("tcp://IP:PORT"); returns once every rank arrived or shmInitTimeout passed.
 * With config->startConfigStoreServer, rank 0 runs the store server in this process. A second
 * call while initialised succeeds and does nothing, as in MemFabric. */
int32_t smem_shm_init(const char* configStoreIpPort, uint32_t worldSize, uint32_t rankId,
                      uint16_t deviceId, smem_shm_config_t* config);

/* Destroys every shm object of this process and leaves the world; flags are reserved (0). */
void smem_shm_uninit(uint32_t flags);

/* The data operations this backend supports (a set of smem_shm_data_op_type). */
uint32_t smem_shm_query_support_data_operation(void);

/* Collective over rankSize ranks: creates shm object `id` (0 .. SMEM_SHM_ID_MAX) to which every
 * rank contributes symmetricSize bytes (the same on every rank, a multiple of the backend's
 * granularity, at most SMEM_SHM_SYMMETRIC_SIZE_MAX). *gva receives the GVA base (rank 0's slot).
 * Returns NULL on failure; ranks that disagree on the arguments all fail. */
smem_shm_t smem_shm_create(uint32_t id, uint32_t rankSize, uint32_t rankId, uint64_t symmetricSize,
                           smem_shm_data_op_type dataOpType, uint32_t flags, void** gva);

/* The stride of the GVA: rank r's slot is (char *)gva + r * smem_shm_get_symmetric_size(handle).
 * 0 on failure. */
uint64_t smem_shm_get_symmetric_size(smem_shm_t handle);

/* Destroys the object in this process (unmaps every slot); flags are reserved (0). */
int32_t smem_shm_destroy(smem_shm_t handle, uint32_t flags);

/* Stores size (1 .. SMEM_SHM_EXTRA_CONTEXT_SIZE_MAX) bytes as this rank's extra context, readable
 * by kernels of every same-node rank at smem_shm_extra_context_addr() (see smem_shm_def.h). */
int32_t smem_shm_set_extra_context(smem_shm_t handle, const void* context, uint32_t size);

/* memloom: the address of rank `rank`'s extra context in this process (NULL for a rank on another
 * node, or on failure) and its size as last set (0 when never set, UINT32_MAX on failure). */
void* smem_shm_extra_context_addr(smem_shm_t handle, uint32_t rank);
uint32_t smem_shm_extra_context_size(smem_shm_t handle, uint32_t rank);

/* This process's rank in the object, and the object's rank count; UINT32_MAX on failure. */
uint32_t smem_shm_get_global_rank(smem_shm_t handle);
uint32_t smem_shm_get_global_rank_size(smem_shm_t handle);

/* Collective: returns when every rank of the object arrived (or fails at the control timeout). */
int32_t smem_shm_control_barrier(smem_shm_t handle);

/* Collective: every rank sends sendSize bytes (the same on every rank); recvBuf receives rank r's
 * bytes at r * sendSize and must hold recvSize >= sendSize * rankSize bytes. */
int32_t smem_shm_control_allgather(smem_shm_t handle, const char* sendBuf, uint32_t sendSize,
                                   char* recvBuf, uint32_t recvSize);

/* Barrier / allgather among rankSize ranks of the object that pass the same key; rankId is the
 * caller's rank within that sub-group. No set-up is needed; a key names one sub-group. */
int32_t smem_shm_subgroup_barrier(smem_shm_t handle, const char* key, uint32_t rankSize,
                                  uint32_t rankId);
int32_t smem_shm_subgroup_allgather(smem_shm_t handle, const char* key, uint32_t rankSize,
                                    uint32_t rankId, const char* sendBuf, uint32_t sendSize,
                                    char* recvBuf, uint32_t recvSize);

/* *reachInfo receives how this rank can reach remoteRank's slot (a set of smem_shm_data_op_type):
 * MTE | SDMA for a same-node rank, 0 for a rank on another node. */
int32_t smem_shm_topology_can_reach(smem_shm_t handle, uint32_t remoteRank, uint32_t* reachInfo);

/* Hands out a number in [0, limit) not held by any other rank of the object (limit <=
 * SMEM_SHM_ATOMIC_NUM_LIMIT); release it with smem_shm_atomic_release_value. SMEM_ERROR when
 * every number below limit is held, as in MemFabric. */
int32_t smem_shm_atomic_alloc_value(smem_shm_t handle, uint32_t limit, uint32_t* value);
int32_t smem_shm_atomic_release_value(smem_shm_t handle, int32_t value);

/* Registers exit, run with the status of smem_shm_global_exit called by any rank of the object. */
int32_t smem_shm_register_exit(smem_shm_t handle, void (*exit)(int));

/* Makes every rank's registered exit function run with `status` (this rank's synchronously). */
void smem_shm_global_exit(smem_shm_t handle, int status);

#ifdef __cplusplus
}
#endif

#endif /* __MEMFABRIC_SMEM_SHM_H__ */
