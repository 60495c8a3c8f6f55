/*
 * memloom's MemFabric-compatible BM (big memory) types: drop-in for MemFabric's
 * smem/host/smem_bm_def.h. Names, fields and values follow the published header.
 */
#ifndef __MEMFABRIC_SMEM_BM_DEF_H__
#define __MEMFABRIC_SMEM_BM_DEF_H__

#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef void* smem_bm_t;

#define SMEM_BM_TIMEOUT_MAX UINT32_MAX /* every timeout is <= UINT32_MAX seconds */
#ifndef ASYNC_COPY_FLAG
#define ASYNC_COPY_FLAG                                                     \
  (1UL << (0)) /* smem_bm_copy*: enqueue and return; smem_bm_wait completes \
                */
#endif
#define SMEM_TLS_PATH_SIZE 256
#define SMEM_BM_USER_MEM_ALIGNMENT 4096U /* smem_bm_register_user_mem: start alignment */

/**
 * @brief Memory types: LOCAL_* are this rank's own contribution, DEVICE/HOST the global ranges.
 */
typedef enum {
  SMEM_MEM_TYPE_LOCAL_DEVICE = 0, /* memory on the local device */
  SMEM_MEM_TYPE_LOCAL_HOST,       /* memory on the local host */
  SMEM_MEM_TYPE_DEVICE,           /* the global device (HBM) range */
  SMEM_MEM_TYPE_HOST,             /* the global host (DRAM) range */

  SMEM_MEM_TYPE_BUTT
} smem_bm_mem_type;

/**
 * @brief How the CPU moves data (a bit set). memloom moves bytes with its copy streams inside a
 * node and with its UCX transport across nodes (RDMA where UCX finds an RDMA device, else UCX's
 * TCP), whichever bits are set; HOST_RDMA or DEVICE_RDMA (ROCE) without an RDMA device log a
 * warning.
 */
typedef enum {
  SMEMB_DATA_OP_SDMA = 1U << 0,
  SMEMB_DATA_OP_HOST_RDMA = 1U << 1,
  SMEMB_DATA_OP_ROCE = SMEMB_DATA_OP_HOST_RDMA, /* MemFabric's earlier name for this bit */
  SMEMB_DATA_OP_HOST_TCP = 1U << 2,
  SMEMB_DATA_OP_DEVICE_RDMA = 1U << 3,
  SMEMB_DATA_OP_HOST_URMA = 1U << 4,
  SMEMB_DATA_OP_BUTT
} smem_bm_data_op_type;

/**
 * @brief Copy directions. L = local device memory, H = local host memory (outside the GVA),
 * G = the global device range, GH = the global host range.
 */
typedef enum {
  SMEMB_COPY_L2G = 0,  /* local device memory -> global device range */
  SMEMB_COPY_G2L = 1,  /* global device range -> local device memory */
  SMEMB_COPY_G2H = 2,  /* global device range -> host memory */
  SMEMB_COPY_H2G = 3,  /* host memory -> global device range */
  SMEMB_COPY_L2GH = 4, /* local device memory -> global host range */
  SMEMB_COPY_GH2L = 5, /* global host range -> local device memory */
  SMEMB_COPY_GH2H = 6, /* global host range -> host memory */
  SMEMB_COPY_H2GH = 7, /* host memory -> global host range */
  SMEMB_COPY_G2G = 8,  /* global (device or host) range -> global (device or host) range */
  SMEMB_COPY_AUTO = 9, /* the direction follows from the addresses */
  /* add here */
  SMEMB_COPY_BUTT
} smem_bm_copy_type;

typedef struct {
  bool tlsEnable;
  char caPath[SMEM_TLS_PATH_SIZE];
  char crlPath[SMEM_TLS_PATH_SIZE];
  char certPath[SMEM_TLS_PATH_SIZE];
  char keyPath[SMEM_TLS_PATH_SIZE];
  char keyPassPath[SMEM_TLS_PATH_SIZE];
  char packagePath[SMEM_TLS_PATH_SIZE];
  char decrypterLibPath[SMEM_TLS_PATH_SIZE];
} smem_tls_config;

typedef struct {
  uint32_t initTimeout;   /* smem_bm_init, default 120 s (min 1, max SMEM_BM_TIMEOUT_MAX) */
  uint32_t createTimeout; /* smem_bm_create, default 120 s (min 1, max SMEM_BM_TIMEOUT_MAX) */
  uint32_t controlOperationTimeout; /* copies, wait, join/leave; default 120 s (min 1) */
  bool startConfigStoreServer;      /* rank 0 starts the config store at storeURL (default true) */
  bool startConfigStoreOnly;        /* only start the config store; this process takes no rank */
  bool dynamicWorldSize;            /* accepted; memloom's worlds have a fixed size */
  bool unifiedAddressSpace;         /* must be true (default): memloom's GVA is one space */
  bool autoRanking;                 /* the config store hands out rank ids (default true) */
  uint16_t rankId;  /* this process's rank when autoRanking is false (default UINT16_MAX) */
  uint32_t flags;   /* reserved, default 0 */
  char hcomUrl[64]; /* accepted; memloom's transport picks its own address */
  smem_tls_config hcomTlsConfig;
  smem_tls_config storeTlsConfig;
} smem_bm_config_t;

typedef struct {
  uint64_t maxDramSize;            /* per-rank host slot size (the GVA stride); 0: localDRAMSize */
  uint64_t maxHbmSize;             /* per-rank device slot size (the GVA stride); 0: localHBMSize */
  uint64_t localDRAMSize;          /* host memory this rank contributes (<= maxDramSize) */
  uint64_t localHBMSize;           /* device memory this rank contributes (<= maxHbmSize) */
  smem_bm_data_op_type dataOpType; /* a set of smem_bm_data_op_type */
  uint32_t flags;                  /* reserved, default 0 */
  char tag[32];                    /* accepted, not interpreted */
  char tagOpInfo[256];             /* accepted, not interpreted */
  int dramShmFd;                   /* must be -1 or 0 (memloom allocates host memory itself) */
} smem_bm_create_option_t;

typedef struct {
  const void* src;
  void* dest;
  size_t dataSize;
} smem_copy_params;

typedef struct {
  void** sources;
  void** destinations;
  const uint64_t* dataSizes;
  uint32_t batchSize;
} smem_batch_copy_params;

#ifdef __cplusplus
}
#endif

#endif /* __MEMFABRIC_SMEM_BM_DEF_H__ */
