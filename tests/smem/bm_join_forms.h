/* The C half of the smem_bm_join forms test (bm_join_forms.c, compiled as C). */
#ifndef MEMLOOM_TESTS_SMEM_BM_JOIN_FORMS_H
#define MEMLOOM_TESTS_SMEM_BM_JOIN_FORMS_H

#include <stdint.h>

#include "smem/host/smem_bm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Joins with the three-argument form, leaves, joins with the two-argument form. */
int32_t join_forms_from_c(smem_bm_t handle, void** seed_form_slot);
int32_t (*join_function_from_c(void))(smem_bm_t, uint32_t, void**);

#ifdef __cplusplus
}
#endif

#endif
