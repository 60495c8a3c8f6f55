/*
 * memloom's MemFabric-compatible BM (big memory) API: drop-in for MemFabric's smem/host/smem_bm.h.
 *
 * A BM object composes device (HBM) and host (DRAM) memory of many ranks into two global virtual
 * address (GVA) ranges, one slot per rank each: rank r's slot of a range starts at
 * smem_bm_ptr_by_mem_type(h, type, 0) + r * stride, the same address in every process, and
 * smem_bm_get_rank_id_by_gva inverts exactly that rule. Same-node slots are mapped; copies to a
 * slot of a rank on another node go through the network transport. Ranks join and leave at any
 * time after their first join, which is collective; copies to a rank that has left fail with
 * SMEM_NOT_FOUND.
 *
 * int32_t functions return 0 (SMEM_SUCCESS) or a negative SMEM_* code; functions returning a
 * handle, pointer or value return NULL / 0 / UINT32_MAX on failure (smem_bm_get_rank_id_by_gva:
 * the code cast to uint32_t). smem_get_last_err_msg() explains every failure.
 */
#ifndef __MEMFABRIC_SMEM_BM_H__
#define __MEMFABRIC_SMEM_BM_H__

#include "smem.h"
#include "smem_bm_def.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sets every field of config to its default, as MemFabric does: timeouts 120 s,
 * startConfigStoreServer, unifiedAddressSpace and autoRanking true, rankId UINT16_MAX,
 * everything else 0 (startConfigStoreOnly, dynamicWorldSize, flags, hcomUrl, both TLS configs). */
int32_t smem_bm_config_init(smem_bm_config_t* config);

/* Joins the world of worldSize (<= SMEM_WORLD_SIZE_MAX) processes through the config store at
 * storeURL ("tcp://IP:PORT"); returns once every rank arrived or initTimeout passed. config may be
 * NULL (defaults); unifiedAddressSpace must be true. The rank is config->rankId, or handed out by
 * the store with autoRanking. A second call while initialised succeeds and does nothing. */
int32_t smem_bm_init(const char* storeURL, uint32_t worldSize, uint16_t deviceId,
                     const smem_bm_config_t* config);

/* Destroys every BM object of this process and leaves the world; flags are reserved (0). */
void smem_bm_uninit(uint32_t flags);

/* This process's rank in the world; UINT32_MAX before smem_bm_init (or on failure). */
uint32_t smem_bm_get_rank_id(void);

/* Collective over every rank of the world: allocates this rank's localDRAMSize bytes of host and
 * localHBMSize bytes of device memory (multiples of the backend's granularity, the same on every
 * rank) and maps the same-node ranks' memory. memberSize is reserved and ignored (MemFabric's
 * own examples pass 0). The memory becomes reachable by peers' copies after smem_bm_join. NULL on
 * failure. */
smem_bm_t smem_bm_create(uint32_t id, uint32_t memberSize, smem_bm_data_op_type dataOpType,
                         uint64_t localDRAMSize, uint64_t localHBMSize, uint32_t flags);

/* Like smem_bm_create with memberSize = worldSize; option->max*Size set the slot strides (0: the
 * local size), which every rank must pass alike, while local sizes may differ (<= the stride). */
smem_bm_t smem_bm_create2(uint32_t id, const smem_bm_create_option_t* option);

/* Leaves (if joined) and destroys the object in this process. */
void smem_bm_destroy(smem_bm_t handle);

/* Makes this rank's memory reachable by peers' copies and allows this rank to copy;
 * *localGvaAddress (when not NULL) receives this rank's own slot (device slot, or host slot
 * without HBM). The first join of each rank is collective, as in MemFabric: it returns once every
 * rank of the world has joined (or fails with SMEM_TIMEOUT after controlOperationTimeout, naming
 * the ranks that did not), so a copy to any peer right after it succeeds. A join after
 * smem_bm_leave is local and visible to every peer before it returns.
 *
 * Two forms compile, in C and C++: smem_bm_join(handle, flags, &gva) (the seed's published form)
 * and smem_bm_join(handle, flags) (MemFabric's current one). The macro below picks by argument
 * count; both call the one exported function (the two-argument form passes NULL). To take the
 * function's address, write smem_bm_join without parentheses after it, or (smem_bm_join). */
int32_t(smem_bm_join)(smem_bm_t handle, uint32_t flags, void** localGvaAddress);
#define SMEM_BM_JOIN_PICK_(a1, a2, a3, form, ...) form
#define SMEM_BM_JOIN_3_(handle, flags, localGvaAddress) \
  (smem_bm_join)((handle), (flags), (localGvaAddress))
#define SMEM_BM_JOIN_2_(handle, flags) (smem_bm_join)((handle), (flags), (void**)0)
#define smem_bm_join(...) \
  SMEM_BM_JOIN_PICK_(__VA_ARGS__, SMEM_BM_JOIN_3_, SMEM_BM_JOIN_2_, unused)(__VA_ARGS__)

/* Withdraws this rank's memory: later copies by peers to it fail; this rank may join again. */
int32_t smem_bm_leave(smem_bm_t handle, uint32_t flags);

/* params->dataSize bytes from params->src to params->dest in direction t. Each global side must
 * lie inside one rank's contribution (no slot boundary crossed). With ASYNC_COPY_FLAG the copy is
 * enqueued and smem_bm_wait completes it (and reports its failure). */
int32_t smem_bm_copy(smem_bm_t handle, smem_copy_params* params, smem_bm_copy_type t,
                     uint32_t flags);

/* batchSize copies in one call; entries contiguous on both sides are merged, and entries for the
 * same remote rank travel in one transport request. */
int32_t smem_bm_copy_batch(smem_bm_t handle, smem_batch_copy_params* params, smem_bm_copy_type t,
                           uint32_t flags);

/* Waits (up to controlOperationTimeout) for every copy issued with ASYNC_COPY_FLAG; returns the
 * first failure among them. */
int32_t smem_bm_wait(smem_bm_t handle);

/* Bytes this rank contributes of memType (DEVICE/LOCAL_DEVICE or HOST/LOCAL_HOST); 0 on failure. */
uint64_t smem_bm_get_local_mem_size_by_mem_type(smem_bm_t handle, smem_bm_mem_type memType);

/* Rank peerRankId's slot in the DEVICE or HOST range (for peerRankId 0: the range's start);
 * LOCAL_DEVICE / LOCAL_HOST accept only this rank's own id. NULL on failure. */
void* smem_bm_ptr_by_mem_type(smem_bm_t handle, smem_bm_mem_type memType, uint16_t peerRankId);

/* The rank whose slot (of either range) holds gva; on failure (a bad handle, gva outside the GVA)
 * the SMEM_* code cast to uint32_t, as MemFabric returns it. */
uint32_t smem_bm_get_rank_id_by_gva(smem_bm_t handle, void* gva);

/* Older published forms: the device contribution's size and the device slot of a peer. */
uint64_t smem_bm_get_local_mem_size(smem_bm_t handle);
void* smem_bm_ptr(smem_bm_t handle, uint16_t peerRankId);

/* Registers user host memory [addr, addr + size) (addr aligned to SMEM_BM_USER_MEM_ALIGNMENT,
 * outside the GVA, not overlapping another registration) as a copy source or destination; the
 * backend pins it where it needs to. */
int32_t smem_bm_register_user_mem(smem_bm_t handle, uint64_t addr, uint64_t size);
int32_t smem_bm_unregister_user_mem(smem_bm_t handle, uint64_t addr);

#ifdef __cplusplus
}
#endif

#endif /* __MEMFABRIC_SMEM_BM_H__ */
