// Both published forms of smem_bm_join compile and run, from C (bm_join_forms.c) and C++; and
// smem_shm_atomic_alloc_value takes MemFabric's uint32_t* (issue 18, items 12 and 13).
#include <gtest/gtest.h>

#include <type_traits>

#include "smem/host/smem_bm.h"
#include "smem/host/smem_shm.h"
#include "tests/smem/bm_join_forms.h"
#include "tests/smem/bm_test_util.h"

namespace memloom::testing {
namespace {

static_assert(std::is_same<decltype(&smem_shm_atomic_alloc_value),
                           int32_t (*)(smem_shm_t, uint32_t, uint32_t*)>::value,
              "smem_shm_atomic_alloc_value takes uint32_t*, as MemFabric's");

TEST(ApiForms, BothJoinFormsFromCAndCpp) {
  auto results = run_ranks(ranks_on_nodes(1), [](const RankContext& ctx) {
    ASSERT_SMEM_OK(bm_init_rank(ctx));
    smem_bm_t bm = smem_bm_create(0, 0, SMEMB_DATA_OP_SDMA, 0, kSlot, 0);
    ASSERT_NE(bm, nullptr) << smem_get_last_err_msg();
    void* slot = nullptr;
    ASSERT_SMEM_OK(join_forms_from_c(bm, &slot));
    EXPECT_EQ(slot, device_slot(bm, 0));
    ASSERT_SMEM_OK(smem_bm_leave(bm, 0));
    ASSERT_SMEM_OK(smem_bm_join(bm, 0));  // MemFabric's current form
    ASSERT_SMEM_OK(smem_bm_leave(bm, 0));
    slot = nullptr;
    ASSERT_SMEM_OK(smem_bm_join(bm, 0, &slot));  // the seed's form
    EXPECT_EQ(slot, device_slot(bm, 0));
    EXPECT_EQ(smem_bm_join(bm, 0), SMEM_REPEAT_CALL);
    // Taking the address names the one exported function in both languages.
    auto cpp_pointer = &smem_bm_join;
    EXPECT_EQ(reinterpret_cast<void*>(cpp_pointer),
              reinterpret_cast<void*>(join_function_from_c()));
    ASSERT_SMEM_OK(smem_bm_leave(bm, 0));
    ASSERT_SMEM_OK(cpp_pointer(bm, 0, nullptr));
    smem_bm_destroy(bm);
    smem_bm_uninit(0);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::testing
