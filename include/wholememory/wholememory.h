/*
 * memloom's WholeMemory C API (drop-in for WholeMemory's wholememory/wholememory.h): communicators
 * and partitioned memory spread over the ranks of a job.
 *
 * Every wholememory_error_code_t function returns WHOLEMEMORY_SUCCESS or an error code; the reason
 * is logged. Functions that return a value directly (a size, a type, a bool) return 0 / NONE /
 * false for an invalid handle and log why. Collective functions (marked "collective") must be
 * called by every rank of the communicator with the same arguments; a mismatch fails on every rank
 * with WHOLEMEMORY_INVALID_INPUT, and every wait ends with an error after MEMLOOM_TIMEOUT_S
 * (default 120 s) instead of hanging.
 *
 * The header compiles as C++ (as published) and also as C99, where the default arguments are
 * dropped and must be passed explicitly.
 */
#ifndef MEMLOOM_WHOLEMEMORY_WHOLEMEMORY_H_
#define MEMLOOM_WHOLEMEMORY_WHOLEMEMORY_H_

#include <stddef.h>
#include <stdio.h>
#include <unistd.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#include <wholememory/global_reference.h>

#ifdef __cplusplus
#define WHOLEMEMORY_DEFAULT_ARG(value) = value
extern "C" {
#else
#define WHOLEMEMORY_DEFAULT_ARG(value)
#endif

enum wholememory_error_code_t {
  WHOLEMEMORY_SUCCESS = 0,
  WHOLEMEMORY_UNKNOW_ERROR, /* the published spelling */
  WHOLEMEMORY_NOT_IMPLEMENTED,
  WHOLEMEMORY_LOGIC_ERROR,         /* an internal invariant broke */
  WHOLEMEMORY_CUDA_ERROR,          /* the accelerator runtime failed */
  WHOLEMEMORY_COMMUNICATION_ERROR, /* a peer or the config store is gone, or a wait timed out */
  WHOLEMEMORY_INVALID_INPUT,       /* a null pointer, an invalid handle, ranks disagree */
  WHOLEMEMORY_INVALID_VALUE,       /* a well-formed value that is not allowed here */
  WHOLEMEMORY_OUT_OF_MEMORY,
  WHOLEMEMORY_NOT_SUPPORTED, /* the combination is not supported on this communicator */
  WHOLEMEMORY_SYSTEM_ERROR,  /* an OS call (file, socket) failed */
};

#ifdef __cplusplus
#define WHOLEMEMORY_RESULT_TYPE_ auto
#else
#define WHOLEMEMORY_RESULT_TYPE_ enum wholememory_error_code_t
#endif
/* Returns the error code of X from the calling function when X fails, naming X on stderr. */
#define WHOLEMEMORY_RETURN_ON_FAIL(X)                                          \
  do {                                                                         \
    WHOLEMEMORY_RESULT_TYPE_ wholememory_return_on_fail_err_ = (X);            \
    if (wholememory_return_on_fail_err_ != WHOLEMEMORY_SUCCESS) {              \
      fprintf(stderr, "File %s line %d %s failed.\n", __FILE__, __LINE__, #X); \
      return wholememory_return_on_fail_err_;                                  \
    }                                                                          \
  } while (0)

/* How the partitions of an allocation are mapped into each rank's address space. */
enum wholememory_memory_type_t {
  WHOLEMEMORY_MT_NONE = 0,
  WHOLEMEMORY_MT_CONTINUOUS,  /* all partitions as one contiguous range (one node only) */
  WHOLEMEMORY_MT_CHUNKED,     /* each partition mapped on its own (one node only) */
  WHOLEMEMORY_MT_DISTRIBUTED, /* only the own partition is mapped */
  WHOLEMEMORY_MT_HIERARCHY,   /* contiguous inside a node, distributed across nodes */
};

enum wholememory_memory_location_t {
  WHOLEMEMORY_ML_NONE = 0,
  WHOLEMEMORY_ML_DEVICE,
  WHOLEMEMORY_ML_HOST,
};

enum wholememory_distributed_backend_t {
  WHOLEMEMORY_DB_NONE = 0,
  WHOLEMEMORY_DB_NCCL, /* the backend's collectives (NCCL on CUDA, memloom's own when emulated) */
  WHOLEMEMORY_DB_NVSHMEM, /* not available in memloom */
};

enum LogLevel { LEVEL_FATAL = 0, LEVEL_ERROR, LEVEL_WARN, LEVEL_INFO, LEVEL_DEBUG, LEVEL_TRACE };

#ifndef __cplusplus
typedef enum wholememory_error_code_t wholememory_error_code_t;
typedef enum wholememory_memory_type_t wholememory_memory_type_t;
typedef enum wholememory_memory_location_t wholememory_memory_location_t;
typedef enum wholememory_distributed_backend_t wholememory_distributed_backend_t;
typedef enum LogLevel LogLevel;
#endif

/* The color a rank passes to wholememory_split_communicator to stay out of every new group. */
#define WHOLEMEMORY_SPILT_NO_COLOR -1
#define WHOLEMEMORY_SPLIT_NOCOLOR WHOLEMEMORY_SPILT_NO_COLOR

/* Initializes the library; flags are reserved and must be 0. MEMLOOM_LOG_LEVEL, when set,
 * overrides log_level. */
wholememory_error_code_t wholememory_init(unsigned int flags,
                                          LogLevel log_level WHOLEMEMORY_DEFAULT_ARG(LEVEL_INFO));

/* Frees every allocation and communicator still alive in this process (locally, without waiting
 * on peers) and stops the config store this process hosts. Handles become invalid. Allocations
 * are freed as by wholememory_free: after the operations using them (bounded likewise). */
wholememory_error_code_t wholememory_finalize(void);

/* RMM is not part of memloom: enabling it returns WHOLEMEMORY_NOT_SUPPORTED. */
wholememory_error_code_t wholememory_set_rmm_enabled(bool enabled);
bool wholememory_is_rmm_enabled(void);

typedef struct wholememory_comm_* wholememory_comm_t;

/* A clique is the set of ranks that can map each other's device memory: the ranks of one node. */
struct clique_info_t {
  int is_in_clique;      /* 1: the rank belongs to a clique */
  int clique_first_rank; /* the lowest communicator rank of my clique */
  int clique_rank;       /* my index inside the clique */
  int clique_rank_num;   /* ranks in my clique */
  int clique_id;         /* my clique's number (cliques are numbered by their lowest rank) */
  int clique_num;        /* cliques in the communicator */
};

#define WHOLEMEMORY_UNIQUE_ID_BYTES (128)
/* Names a communicator to be: the config store's address and a random token. */
struct wholememory_unique_id_t {
  char internal[WHOLEMEMORY_UNIQUE_ID_BYTES];
};

#ifndef __cplusplus
typedef struct clique_info_t clique_info_t;
typedef struct wholememory_unique_id_t wholememory_unique_id_t;
#endif

/* Creates an id for wholememory_create_communicator. The id names the store at MEMLOOM_STORE_URL,
 * or else a store this process starts and keeps until wholememory_finalize (listening at
 * MEMLOOM_HOST_ADDR, default 127.0.0.1, on a free port). Pass the id to the other ranks by any
 * means. */
wholememory_error_code_t wholememory_create_unique_id(wholememory_unique_id_t* unique_id);

/* Collective over `size` processes, each passing its own rank. */
wholememory_error_code_t wholememory_create_communicator(wholememory_comm_t* comm,
                                                         wholememory_unique_id_t unique_id,
                                                         int rank, int size);

/* Collective over comm: ranks with the same color form a new communicator ordered by key, then by
 * rank in comm; WHOLEMEMORY_SPILT_NO_COLOR gives this rank a NULL communicator. */
wholememory_error_code_t wholememory_split_communicator(wholememory_comm_t* new_comm,
                                                        wholememory_comm_t comm, int color,
                                                        int key);

/* Collective. Fails with WHOLEMEMORY_INVALID_INPUT while allocations of comm are alive, and for the
 * local/cross communicators owned by a HIERARCHY allocation. */
wholememory_error_code_t wholememory_destroy_communicator(wholememory_comm_t comm);

/* WHOLEMEMORY_SUCCESS if comm can allocate this type at this location, else
 * WHOLEMEMORY_NOT_SUPPORTED (CONTINUOUS and CHUNKED need all ranks on one node). */
wholememory_error_code_t wholememory_communicator_support_type_location(
    wholememory_comm_t comm, wholememory_memory_type_t memory_type,
    wholememory_memory_location_t memory_location);

wholememory_error_code_t wholememory_communicator_get_rank(int* rank, wholememory_comm_t comm);
wholememory_error_code_t wholememory_communicator_get_size(int* size, wholememory_comm_t comm);
/* Ranks of comm on this rank's node. */
wholememory_error_code_t wholememory_communicator_get_local_size(int* local_size,
                                                                 wholememory_comm_t comm);
wholememory_error_code_t wholememory_communicator_get_clique_info(clique_info_t* clique_info,
                                                                  wholememory_comm_t comm);

bool wholememory_communicator_is_bind_to_nvshmem(wholememory_comm_t comm);
/* WHOLEMEMORY_DB_NCCL is accepted; WHOLEMEMORY_DB_NVSHMEM is not supported. */
wholememory_error_code_t wholememory_communicator_set_distributed_backend(
    wholememory_comm_t comm, wholememory_distributed_backend_t distributed_backend);
wholememory_distributed_backend_t wholememory_communicator_get_distributed_backend(
    wholememory_comm_t comm);

/* Collective. */
wholememory_error_code_t wholememory_communicator_barrier(wholememory_comm_t comm);

typedef struct wholememory_handle_* wholememory_handle_t;

/* Collective: allocates total_size bytes spread over the ranks of comm. data_granularity bytes are
 * never split between ranks (total_size must be a multiple of it). Rank r gets
 * rank_entry_partition[r] entries of data_granularity bytes when the array is given (world_size
 * entries summing to total_size / data_granularity), else the equal plan. */
wholememory_error_code_t wholememory_malloc(
    wholememory_handle_t* wholememory_handle_ptr, size_t total_size, wholememory_comm_t comm,
    wholememory_memory_type_t memory_type, wholememory_memory_location_t memory_location,
    size_t data_granularity, size_t* rank_entry_partition WHOLEMEMORY_DEFAULT_ARG(NULL));

/* Collective. A freed handle is invalid afterwards (a second free is WHOLEMEMORY_INVALID_INPUT).
 * Operations another thread runs on the memory meanwhile either finish or fail with
 * WHOLEMEMORY_INVALID_INPUT, never crash: the memory is unmapped only after those in flight have
 * returned and the stream work that gathers and scatters enqueued on it has completed, waiting at
 * most the collective timeout (memory still in use then stays mapped until the process exits).
 * Work the caller enqueued itself on pointers into the memory is the caller's to finish first. */
wholememory_error_code_t wholememory_free(wholememory_handle_t wholememory_handle);

wholememory_error_code_t wholememory_get_communicator(wholememory_comm_t* comm,
                                                      wholememory_handle_t wholememory_handle);
/* HIERARCHY only (else WHOLEMEMORY_NOT_SUPPORTED): the ranks of my node. */
wholememory_error_code_t wholememory_get_local_communicator(
    wholememory_comm_t* comm, wholememory_handle_t wholememory_handle);
/* HIERARCHY only: the ranks with my local rank on every node. */
wholememory_error_code_t wholememory_get_cross_communicator(
    wholememory_comm_t* comm, wholememory_handle_t wholememory_handle);

wholememory_memory_type_t wholememory_get_memory_type(wholememory_handle_t wholememory_handle);
wholememory_memory_location_t wholememory_get_memory_location(
    wholememory_handle_t wholememory_handle);
wholememory_distributed_backend_t wholememory_get_distributed_backend(
    wholememory_handle_t wholememory_handle);
size_t wholememory_get_total_size(wholememory_handle_t wholememory_handle);
size_t wholememory_get_data_granularity(wholememory_handle_t wholememory_handle);

/* My partition: a pointer this rank can access directly, its size and its offset in the whole.
 * Any output pointer may be NULL. */
wholememory_error_code_t wholememory_get_local_memory(void** local_ptr, size_t* local_size,
                                                      size_t* local_offset,
                                                      wholememory_handle_t wholememory_handle);
wholememory_error_code_t wholememory_get_local_size(size_t* local_size,
                                                    wholememory_handle_t wholememory_handle);
wholememory_error_code_t wholememory_get_local_offset(size_t* local_offset,
                                                      wholememory_handle_t wholememory_handle);

/* Rank `rank`'s partition as mapped in this process; WHOLEMEMORY_INVALID_INPUT when it is not
 * mapped here (DISTRIBUTED, or another node's rank of a HIERARCHY allocation). */
wholememory_error_code_t wholememory_get_rank_memory(void** rank_memory_ptr,
                                                     size_t* rank_memory_size,
                                                     size_t* rank_memory_offset, int rank,
                                                     wholememory_handle_t wholememory_handle);

/* The default plan: ceil(total_entry_count / world_size) entries per rank, the rest on the last
 * ranks (which may get fewer, or none). */
wholememory_error_code_t wholememory_equal_entry_partition_plan(size_t* entry_per_rank,
                                                                size_t total_entry_count,
                                                                int world_size);

/* The contiguous range of the whole allocation: CONTINUOUS, and HIERARCHY on a single node;
 * WHOLEMEMORY_INVALID_INPUT for other types. */
wholememory_error_code_t wholememory_get_global_pointer(void** global_ptr,
                                                        wholememory_handle_t wholememory_handle);
/* CONTINUOUS, CHUNKED, and HIERARCHY on a single node (see global_reference.h). */
wholememory_error_code_t wholememory_get_global_reference(wholememory_gref_t* wholememory_gref,
                                                          wholememory_handle_t wholememory_handle);

/* world_size sizes / world_size + 1 offsets (the last is the total size). */
wholememory_error_code_t wholememory_get_rank_partition_sizes(
    size_t* rank_mem_sizes, wholememory_handle_t wholememory_handle);
wholememory_error_code_t wholememory_get_rank_partition_offsets(
    size_t* rank_mem_offsets, wholememory_handle_t wholememory_handle);

/* The backend's device count, queried in a forked child so this process initialises nothing;
 * -1 on error. */
int fork_get_device_count(void);

/* Collective: loads the logical concatenation of the files, entry i (file_entry_size bytes) going
 * to bytes [i * memory_entry_size + memory_offset, + file_entry_size) of the allocation. With
 * round_robin_size R > 0, blocks of R entries are dealt to the ranks in turn and each rank stores
 * its entries packed from the start of its partition. Each rank reads only its own part. Every
 * file's size must be a multiple of file_entry_size, the entries must fit, and every rank must see
 * files of the same sizes; otherwise every rank fails. */
wholememory_error_code_t wholememory_load_from_file(wholememory_handle_t wholememory_handle,
                                                    size_t memory_offset, size_t memory_entry_size,
                                                    size_t file_entry_size, const char** file_names,
                                                    int file_count, int round_robin_size);

/* Collective: every rank writes the entries of its own partition (file_entry_size bytes at
 * memory_offset of each memory_entry_stride-byte entry) to its own local_file_name. */
wholememory_error_code_t wholememory_store_to_file(wholememory_handle_t wholememory_handle,
                                                   size_t memory_offset, size_t memory_entry_stride,
                                                   size_t file_entry_size,
                                                   const char* local_file_name);

/* True when every rank of comm is on one node. */
bool wholememory_is_intranode_communicator(wholememory_comm_t comm);
/* True when every rank of comm is in one clique (for memloom: one node). */
bool wholememory_is_intra_mnnvl_communicator(wholememory_comm_t comm);
bool wholememory_is_build_with_nvshmem(void);

#ifdef __cplusplus
}
#endif

#undef WHOLEMEMORY_DEFAULT_ARG

#endif /* MEMLOOM_WHOLEMEMORY_WHOLEMEMORY_H_ */
