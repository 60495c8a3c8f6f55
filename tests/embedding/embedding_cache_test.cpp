// The embedding cache (src/wholememory/embedding/embedding.h), ratios 0, 0.1 and 1, on a host
// table with a device cache, 4 ranks over 2 emulated nodes: every gather after a gradient apply
// returns what an uncached embedding returns; cached rows are updated in the cache (the table
// keeps their old values: hits) and the others in the table (misses); writeback_cache then
// drop_all_cache leaves the table equal to the uncached run's, and training goes on afterwards.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tests/embedding/embedding_test_support.h"

namespace memloom::embtest {
namespace {

using wmtest::ranks_on_nodes;
using wmtest::run_with_comm;

constexpr int64_t kRows = 60;
constexpr int64_t kDim = 7;

wholememory_embedding_t make_embedding(wholememory_comm_t comm,
                                       wholememory_embedding_cache_policy_t policy,
                                       wholememory_embedding_optimizer_t optimizer,
                                       const std::vector<float>& initial, int rank, int world) {
  auto desc = opstest::matrix_desc(kRows, kDim, kDim, 0, WHOLEMEMORY_DT_FLOAT);
  wholememory_embedding_t embedding = nullptr;
  EXPECT_EQ(WHOLEMEMORY_SUCCESS,
            wholememory_create_embedding(&embedding, &desc, comm, WHOLEMEMORY_MT_DISTRIBUTED,
                                         WHOLEMEMORY_ML_HOST, policy));
  if (embedding == nullptr) return nullptr;
  EXPECT_EQ(WHOLEMEMORY_SUCCESS, wholememory_embedding_set_optimizer(embedding, optimizer));
  scatter_floats(wholememory_embedding_get_embedding_tensor(embedding), initial, kDim, rank, world,
                 comm);
  return embedding;
}

void apply_batch(wholememory_embedding_t embedding, int rank, int step) {
  std::mt19937_64 rng(77u * static_cast<unsigned>(step) + static_cast<unsigned>(rank));
  std::uniform_int_distribution<int64_t> row(0, kRows - 1);
  std::vector<int64_t> indices(25);
  for (auto& index : indices) index = row(rng);
  std::vector<float> grads(indices.size() * kDim);
  for (size_t i = 0; i < grads.size(); ++i) grads[i] = static_cast<float>((i * 7 + step) % 13) - 6;
  DeviceTensor list(indices, WHOLEMEMORY_DT_INT64);
  DeviceTensor grad(grads, WHOLEMEMORY_DT_FLOAT, kDim);
  EXPECT_EQ(WHOLEMEMORY_SUCCESS,
            wholememory_embedding_gather_gradient_apply(embedding, list.tensor(), grad.tensor(),
                                                        true, 0.05F, nullptr, 0));
}

TEST(EmbeddingCache, RatiosZeroTenthAndOneMatchAnUncachedRun) {
  auto results = run_with_comm(ranks_on_nodes(4, 2), [](const auto& context, auto comm) {
    const int world = context.world_size;
    std::vector<float> initial(kRows * kDim);
    for (size_t i = 0; i < initial.size(); ++i) initial[i] = std::sin(static_cast<float>(i));
    std::vector<int64_t> all(kRows);
    for (int64_t r = 0; r < kRows; ++r) all[r] = r;
    for (const float ratio : {0.0F, 0.1F, 1.0F}) {
      SCOPED_TRACE("cache ratio " + std::to_string(ratio));
      wholememory_embedding_optimizer_t optimizer = nullptr;
      EMB_ASSERT_OK(wholememory_create_embedding_optimizer(&optimizer, WHOLEMEMORY_OPT_LAZY_ADAM));
      wholememory_embedding_cache_policy_t policy = nullptr;
      EMB_ASSERT_OK(wholememory_create_embedding_cache_policy(
          &policy, comm, WHOLEMEMORY_MT_DISTRIBUTED, WHOLEMEMORY_ML_DEVICE,
          WHOLEMEMORY_AT_READWRITE, ratio));
      auto* plain = make_embedding(comm, nullptr, optimizer, initial, context.rank, world);
      auto* cached = make_embedding(comm, policy, optimizer, initial, context.rank, world);
      ASSERT_NE(nullptr, plain);
      ASSERT_NE(nullptr, cached);
      wholememory_tensor_t table = wholememory_embedding_get_embedding_tensor(cached);
      std::vector<size_t> offsets(world + 1);
      EMB_ASSERT_OK(wholememory_tensor_get_entry_offsets(offsets.data(), table));
      std::vector<bool> is_cached(kRows, false);
      for (int r = 0; r < world; ++r) {
        const auto local = static_cast<int64_t>(offsets[r + 1] - offsets[r]);
        const auto count = std::min<int64_t>(
            local, static_cast<int64_t>(std::ceil(static_cast<double>(ratio) * local)));
        for (int64_t k = 0; k < count; ++k) is_cached[offsets[r] + k] = true;
      }
      for (int step = 0; step < 3; ++step) {
        apply_batch(plain, context.rank, step);
        apply_batch(cached, context.rank, step);
        EMB_ASSERT_OK(wholememory_communicator_barrier(comm));
        const auto expected = embedding_gather_floats(plain, all, kDim);
        EXPECT_EQ(expected, embedding_gather_floats(cached, all, kDim)) << "step " << step;
        // The table itself: cached rows as they were (their updates are in the cache), the others
        // updated in place.
        const auto raw = gather_floats(table, all, kDim);
        for (int64_t row = 0; row < kRows; ++row) {
          const auto* want = is_cached[row] ? &initial : &expected;
          for (int64_t c = 0; c < kDim; ++c) {
            ASSERT_EQ((*want)[row * kDim + c], raw[row * kDim + c])
                << "row " << row << (is_cached[row] ? " (cached)" : " (not cached)");
          }
        }
      }
      EMB_ASSERT_OK(wholememory_embedding_writeback_cache(cached, 0));
      EMB_ASSERT_OK(wholememory_embedding_drop_all_cache(cached, 0));
      const auto expected = embedding_gather_floats(plain, all, kDim);
      EXPECT_EQ(expected, gather_floats(table, all, kDim)) << "the table after writeback";
      EXPECT_EQ(expected, embedding_gather_floats(cached, all, kDim)) << "gather after the drop";
      // The cache refills at the next apply; results still agree.
      apply_batch(plain, context.rank, 9);
      apply_batch(cached, context.rank, 9);
      EMB_ASSERT_OK(wholememory_communicator_barrier(comm));
      EXPECT_EQ(embedding_gather_floats(plain, all, kDim),
                embedding_gather_floats(cached, all, kDim));
      EMB_EXPECT_OK(wholememory_destroy_embedding(plain));
      EMB_EXPECT_OK(wholememory_destroy_embedding(cached));
      EMB_EXPECT_OK(wholememory_destroy_embedding_cache_policy(policy));
      wholememory_destroy_embedding_optimizer(optimizer);
    }
  });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::embtest
