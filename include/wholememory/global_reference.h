/*
 * memloom's WholeMemory global reference (drop-in for WholeMemory's
 * wholememory/global_reference.h). A global reference lets a kernel address every partition of a
 * CONTINUOUS or CHUNKED allocation directly; the arrays it points to live in memory of the
 * allocation's location, so device kernels can read them.
 */
#ifndef MEMLOOM_WHOLEMEMORY_GLOBAL_REFERENCE_H_
#define MEMLOOM_WHOLEMEMORY_GLOBAL_REFERENCE_H_

#include <stddef.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*
 * CONTINUOUS: `pointer` is the start of the whole range; `stride` is 0.
 * CHUNKED:    `pointer` is an array of world_size data pointers, one per rank (NULL for a rank
 *             whose partition is empty); `stride` is the partition size of rank 0.
 * Both: `rank_memory_offsets` holds world_size + 1 byte offsets (rank r owns
 * [offsets[r], offsets[r+1])); `same_chunk` is true when every rank holds `stride` bytes until
 * the total runs out (the last ranks may hold less or nothing), so the owner of byte `o` is
 * o / stride. CHUNKED HOST memory is mapped as one range and has the CONTINUOUS form.
 */
struct wholememory_gref_t {
  void* pointer;
  size_t* rank_memory_offsets;
  int world_size;
  size_t stride;
  bool same_chunk;
};

/* A reference to one continuous range (world_size 1, no offset table). */
struct wholememory_gref_t wholememory_create_continuous_global_reference(void* ptr);

/* Declared for source compatibility; memloom is not built with NVSHMEM. */
struct wholememory_nvshmem_ref_t {
  void* pointer;
  size_t* rank_memory_offsets;
  size_t stride;
  int world_rank;
  int world_size;
  bool same_chunk;
};

#ifndef __cplusplus
typedef struct wholememory_gref_t wholememory_gref_t;
typedef struct wholememory_nvshmem_ref_t wholememory_nvshmem_ref_t;
#endif

#ifdef __cplusplus
}
#endif

#endif /* MEMLOOM_WHOLEMEMORY_GLOBAL_REFERENCE_H_ */
