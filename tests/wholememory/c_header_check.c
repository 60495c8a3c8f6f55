/* Compiled as C: the public headers must be usable from C programs (default arguments dropped). */
#include <wholememory/wholememory.h>

int wm_c_header_check(void) {
  wholememory_gref_t gref = wholememory_create_continuous_global_reference(0);
  size_t per_rank = 0;
  if (wholememory_equal_entry_partition_plan(&per_rank, 10, 4) != WHOLEMEMORY_SUCCESS) return 1;
  if (per_rank != 3) return 2;
  if (gref.pointer != 0 || gref.stride != 0) return 3;
  if (wholememory_is_build_with_nvshmem()) return 4;
  if (WHOLEMEMORY_SPLIT_NOCOLOR != WHOLEMEMORY_SPILT_NO_COLOR) return 5;
  return sizeof(wholememory_unique_id_t) == WHOLEMEMORY_UNIQUE_ID_BYTES ? 0 : 6;
}
