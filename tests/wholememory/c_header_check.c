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

/* Values outside the enums, as only a C caller can pass them (C++ cannot even form them). */
int wm_c_init_with_log_level(int level) {
  return wholememory_init(0, (LogLevel)level);
}

int wm_c_support_type_location(wholememory_comm_t comm, int type, int location) {
  return wholememory_communicator_support_type_location(comm, (wholememory_memory_type_t)type,
                                                        (wholememory_memory_location_t)location);
}

int wm_c_set_distributed_backend(wholememory_comm_t comm, int backend) {
  return wholememory_communicator_set_distributed_backend(
      comm, (wholememory_distributed_backend_t)backend);
}

int wm_c_malloc(wholememory_handle_t* handle, size_t total_size, wholememory_comm_t comm, int type,
                int location, size_t granularity) {
  return wholememory_malloc(handle, total_size, comm, (wholememory_memory_type_t)type,
                            (wholememory_memory_location_t)location, granularity, NULL);
}
