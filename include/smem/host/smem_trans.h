/*
 * memloom's MemFabric-compatible TRANS API (drop-in for MemFabric's smem/host/smem_trans.h): a
 * transfer engine that reads and writes memory registered by peer instances named "ip:port".
 *
 * - uniqueId is "IPv4:port" or "[IPv6]:port": the instance's name and the address its data server
 *   listens on. Instances find each other through the config store at storeUrl.
 * - Paths: a peer on the same node (MEMLOOM_NODE, else the host) is copied to directly (mapped
 *   smem_trans_malloc memory, else Linux cross-memory attach) when dataOpType has
 *   SMEMB_DATA_OP_SDMA; otherwise, and for peers on other nodes, bytes stream over TCP to the
 *   peer's data server when dataOpType has any of HOST_TCP, HOST_RDMA, HOST_URMA or DEVICE_RDMA.
 *   On the CUDA backend registered memory may be device memory, which the CPU cannot address:
 *   there every transfer goes through the data servers, staged in host buffers by stream copies.
 * - Roles: SENDER and BOTH initiate reads and writes; RECEIVER and BOTH serve their registered
 *   memory to peers.
 * - Every int32_t function returns 0 on success and a negative SMEM_* code on failure (a call
 *   before smem_trans_init: SMEM_INVALID_PARAM, as in MemFabric); the reason is kept per thread
 *   (smem_get_last_err_msg). Every wait is bounded by config.initTimeout.
 * - smem_trans_register_mem returns once every peer can reach the range; smem_trans_malloc
 *   reserves its memory lazily (pages come when first touched).
 * - A failed batch may have transferred some of its entries.
 */
#ifndef __MEMFABRIC_SMEM_TRANS_H__
#define __MEMFABRIC_SMEM_TRANS_H__

#include <stddef.h>

#include "smem.h"
#include "smem_trans_def.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fills config with MemFabric's defaults: SENDER, initTimeout 120 s, deviceId UINT32_MAX, flags 0,
 * startConfigServer false; and dataOpType 0 (MemFabric leaves it alone), which smem_trans_init and
 * smem_trans_create take as the default, SDMA|HOST_TCP. */
int32_t smem_trans_config_init(smem_trans_config_t* config);

/* Initializes the TRANS environment of the process (once; later calls succeed and do nothing). */
int32_t smem_trans_init(const smem_trans_config_t* config);

/* Destroys every instance still alive and un-initializes; flags are reserved. */
void smem_trans_uninit(uint32_t flags);

/* Creates an instance named uniqueId whose data server listens on that address; NULL on failure. */
smem_trans_t smem_trans_create(const char* storeUrl, const char* uniqueId,
                               const smem_trans_config_t* config);

/* Destroys an instance: peers can no longer reach it; its registrations and malloc'd memory go. */
void smem_trans_destroy(smem_trans_t handle, uint32_t flags);

/* Allocates capacity bytes of host memory that same-node peers map directly, registered for
 * transfers; NULL on failure. Release it with smem_trans_free. */
void* smem_trans_malloc(smem_trans_t handle, size_t capacity);

/* Deregisters and frees memory from smem_trans_malloc. */
int32_t smem_trans_free(smem_trans_t handle, void* address);

/* Registers [address, address+capacity) (host or device memory) as a transfer target. Registering
 * exactly the same range again succeeds; a range overlapping another registration is refused. */
int32_t smem_trans_register_mem(smem_trans_t handle, void* address, size_t capacity,
                                uint32_t flags);

/* Registers count ranges; all or none. */
int32_t smem_trans_batch_register_mem(smem_trans_t handle, void* addresses[], size_t capacities[],
                                      uint32_t count, uint32_t flags);

/* Deregisters the range that starts at address; waits until no peer is copying into it. */
int32_t smem_trans_deregister_mem(smem_trans_t handle, void* address);

/* Copies dataSize bytes from localAddr to remoteAddr in the registered memory of remoteUniqueId. */
int32_t smem_trans_write(smem_trans_t handle, const void* localAddr, const char* remoteUniqueId,
                         void* remoteAddr, size_t dataSize, uint32_t flags);

int32_t smem_trans_batch_write(smem_trans_t handle, const void* localAddrs[],
                               const char* remoteUniqueId, void* remoteAddrs[], size_t dataSizes[],
                               uint32_t batchSize, uint32_t flags);

/* Copies dataSize bytes from remoteAddr in the registered memory of remoteUniqueId to localAddr. */
int32_t smem_trans_read(smem_trans_t handle, void* localAddr, const char* remoteUniqueId,
                        const void* remoteAddr, size_t dataSize, uint32_t flags);

int32_t smem_trans_batch_read(smem_trans_t handle, void* localAddrs[], const char* remoteUniqueId,
                              const void* remoteAddrs[], size_t dataSizes[], uint32_t batchSize,
                              uint32_t flags);

/* The *_submit variants enqueue the transfer on stream (a cudaStream_t on CUDA, a memloom stream's
 * native handle when emulated) and return at once; it runs after earlier work of the stream and
 * before later work. Arguments are checked at submission; a transfer failure is reported by the
 * stream's synchronization. */
int32_t smem_trans_read_submit(smem_trans_t handle, void* localAddr, const char* remoteUniqueId,
                               const void* remoteAddr, size_t dataSize, void* stream,
                               uint32_t flags);

int32_t smem_trans_write_submit(smem_trans_t handle, const void* localAddr,
                                const char* remoteUniqueId, void* remoteAddr, size_t dataSize,
                                void* stream, uint32_t flags);

int32_t smem_trans_batch_read_submit(smem_trans_t handle, void* localAddrs[],
                                     const char* remoteUniqueId, const void* remoteAddrs[],
                                     size_t dataSizes[], uint32_t batchSize, void* stream,
                                     uint32_t flags);

int32_t smem_trans_batch_write_submit(smem_trans_t handle, const void* localAddrs[],
                                      const char* remoteUniqueId, void* remoteAddrs[],
                                      size_t dataSizes[], uint32_t batchSize, void* stream,
                                      uint32_t flags);

#ifdef __cplusplus
}
#endif

#endif /* __MEMFABRIC_SMEM_TRANS_H__ */
