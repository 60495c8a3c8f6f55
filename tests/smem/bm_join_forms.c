/* Compiled as C: both published forms of smem_bm_join, the seed's (three arguments) and
 * MemFabric's current one (two), must compile and run against memloom's header. */
#include <stddef.h>

#include "smem/host/smem_bm.h"
#include "tests/smem/bm_join_forms.h"

int32_t join_forms_from_c(smem_bm_t handle, void** seed_form_slot) {
  int32_t rc = smem_bm_join(handle, 0, seed_form_slot);
  if (rc != SMEM_SUCCESS) return rc;
  rc = smem_bm_leave(handle, 0);
  if (rc != SMEM_SUCCESS) return rc;
  return smem_bm_join(handle, 0);
}

int32_t (*join_function_from_c(void))(smem_bm_t, uint32_t, void**) {
  /* The function's address is still the one exported symbol. */
  return smem_bm_join;
}
