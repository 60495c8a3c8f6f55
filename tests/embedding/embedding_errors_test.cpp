// Bad input to the embedding API: the API's code, on every rank where the call is collective,
// never a crash or a hang.
#include <gtest/gtest.h>

#include <chrono>

#include "tests/embedding/embedding_test_support.h"

extern "C" int embedding_c_header_check(void);

namespace memloom::embtest {
namespace {

using wmtest::ranks_on_nodes;
using wmtest::run_with_comm;

TEST(EmbeddingErrors, HeadersCompileAsC) {
  auto results = run_with_comm(ranks_on_nodes(1, 1),
                               [](const auto&, auto) { EXPECT_EQ(0, embedding_c_header_check()); });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(EmbeddingErrors, OptimizersAndPolicies) {
  auto results = run_with_comm(ranks_on_nodes(1, 1), [](const auto&, auto comm) {
    wholememory_embedding_optimizer_t optimizer = nullptr;
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_create_embedding_optimizer(nullptr, WHOLEMEMORY_OPT_SGD));
    EXPECT_EQ(WHOLEMEMORY_NOT_IMPLEMENTED,
              wholememory_create_embedding_optimizer(&optimizer, WHOLEMEMORY_OPT_NONE));
    EXPECT_EQ(WHOLEMEMORY_NOT_IMPLEMENTED,
              wholememory_create_embedding_optimizer(
                  &optimizer, static_cast<wholememory_optimizer_type_t>(77)));
    EMB_ASSERT_OK(wholememory_create_embedding_optimizer(&optimizer, WHOLEMEMORY_OPT_RMSPROP));
    float value = 0.5F;
    EMB_EXPECT_OK(wholememory_optimizer_set_parameter(optimizer, "alpha", &value));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_optimizer_set_parameter(optimizer, "beta1", &value));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_optimizer_set_parameter(optimizer, nullptr, &value));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_optimizer_set_parameter(optimizer, "alpha", nullptr));
    wholememory_destroy_embedding_optimizer(optimizer);
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_optimizer_set_parameter(optimizer, "alpha", &value));

    wholememory_embedding_cache_policy_t policy = nullptr;
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_create_embedding_cache_policy(&policy, comm, WHOLEMEMORY_MT_CHUNKED,
                                                        WHOLEMEMORY_ML_DEVICE,
                                                        WHOLEMEMORY_AT_READWRITE, 1.5F));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_create_embedding_cache_policy(
                                             &policy, comm, WHOLEMEMORY_MT_CHUNKED,
                                             WHOLEMEMORY_ML_DEVICE, WHOLEMEMORY_AT_NONE, 0.5F));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_create_embedding_cache_policy(&policy, nullptr, WHOLEMEMORY_MT_CHUNKED,
                                                        WHOLEMEMORY_ML_DEVICE,
                                                        WHOLEMEMORY_AT_READWRITE, 0.5F));
    EMB_ASSERT_OK(wholememory_create_embedding_cache_policy(&policy, comm, WHOLEMEMORY_MT_CHUNKED,
                                                            WHOLEMEMORY_ML_DEVICE,
                                                            WHOLEMEMORY_AT_READONLY, 0.5F));
    auto desc = opstest::matrix_desc(10, 3, 3, 0, WHOLEMEMORY_DT_FLOAT);
    wholememory_embedding_t embedding = nullptr;
    EXPECT_EQ(WHOLEMEMORY_NOT_IMPLEMENTED,
              wholememory_create_embedding(&embedding, &desc, comm, WHOLEMEMORY_MT_CONTINUOUS,
                                           WHOLEMEMORY_ML_HOST, policy));
    EMB_EXPECT_OK(wholememory_destroy_embedding_cache_policy(policy));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_destroy_embedding_cache_policy(policy));
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(EmbeddingErrors, CreateAndUse) {
  auto results = run_with_comm(ranks_on_nodes(1, 1), [](const auto&, auto comm) {
    auto desc = opstest::matrix_desc(10, 3, 3, 0, WHOLEMEMORY_DT_FLOAT);
    wholememory_embedding_t embedding = nullptr;
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_create_embedding(nullptr, &desc, comm, WHOLEMEMORY_MT_CONTINUOUS,
                                           WHOLEMEMORY_ML_HOST, nullptr));
    EXPECT_EQ(WHOLEMEMORY_NOT_IMPLEMENTED,
              wholememory_create_embedding(&embedding, &desc, comm, WHOLEMEMORY_MT_CONTINUOUS,
                                           WHOLEMEMORY_ML_HOST, nullptr, nullptr, -1, 4));
    auto ints = opstest::matrix_desc(10, 3, 3, 0, WHOLEMEMORY_DT_INT);
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_create_embedding(&embedding, &ints, comm, WHOLEMEMORY_MT_CONTINUOUS,
                                           WHOLEMEMORY_ML_HOST, nullptr));
    auto vector = opstest::array_desc(10, 0, WHOLEMEMORY_DT_FLOAT);
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_create_embedding(&embedding, &vector, comm, WHOLEMEMORY_MT_CONTINUOUS,
                                           WHOLEMEMORY_ML_HOST, nullptr));
    EMB_ASSERT_OK(wholememory_create_embedding(&embedding, &desc, comm, WHOLEMEMORY_MT_CONTINUOUS,
                                               WHOLEMEMORY_ML_HOST, nullptr));
    const char* const* names = wholememory_embedding_get_optimizer_state_names(embedding);
    ASSERT_NE(nullptr, names);
    EXPECT_EQ(nullptr, names[0]);
    DeviceTensor indices(std::vector<int64_t>{1, 2}, WHOLEMEMORY_DT_INT64);
    DeviceTensor grads(std::vector<float>(6, 1.0F), WHOLEMEMORY_DT_FLOAT, 3);
    // No optimizer yet.
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_embedding_gather_gradient_apply(embedding, indices.tensor(),
                                                          grads.tensor(), false, 0.1F, nullptr, 0));
    wholememory_embedding_optimizer_t optimizer = nullptr;
    EMB_ASSERT_OK(wholememory_create_embedding_optimizer(&optimizer, WHOLEMEMORY_OPT_LAZY_ADAM));
    EMB_ASSERT_OK(wholememory_embedding_set_optimizer(embedding, optimizer));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_embedding_set_optimizer(embedding, optimizer));
    names = wholememory_embedding_get_optimizer_state_names(embedding);
    ASSERT_NE(nullptr, names);
    EXPECT_STREQ("m", names[0]);
    EXPECT_STREQ("v", names[1]);
    EXPECT_STREQ("beta12t", names[2]);
    EXPECT_EQ(nullptr, names[3]);
    DeviceTensor past(std::vector<int64_t>{1, 10}, WHOLEMEMORY_DT_INT64);
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_embedding_gather_gradient_apply(embedding, past.tensor(), grads.tensor(),
                                                          false, 0.1F, nullptr, 0));
    DeviceTensor narrow(std::vector<float>(4, 1.0F), WHOLEMEMORY_DT_FLOAT, 2);
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_embedding_gather_gradient_apply(
                  embedding, indices.tensor(), narrow.tensor(), false, 0.1F, nullptr, 0));
    DeviceTensor halves(std::vector<uint16_t>(6, 0), WHOLEMEMORY_DT_HALF, 3);
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_embedding_gather_gradient_apply(
                  embedding, indices.tensor(), halves.tensor(), false, 0.1F, nullptr, 0));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_embedding_gather_gradient_apply(
                  embedding, wholememory_embedding_get_embedding_tensor(embedding), grads.tensor(),
                  false, 0.1F, nullptr, 0));
    EMB_EXPECT_OK(wholememory_destroy_embedding(embedding));
    wholememory_destroy_embedding_optimizer(optimizer);
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_destroy_embedding(embedding));
    EXPECT_EQ(nullptr, wholememory_embedding_get_embedding_tensor(embedding));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_embedding_writeback_cache(embedding, 0));
  });
  EXPECT_ALL_RANKS_PASS(results);
}

// An index past the table on one rank fails the apply on every rank, and the embedding stays
// usable.
TEST(EmbeddingErrors, BadIndexOnOneRankFailsEveryRank) {
  auto results = run_with_comm(ranks_on_nodes(2, 2), [](const auto& context, auto comm) {
    auto desc = opstest::matrix_desc(10, 2, 2, 0, WHOLEMEMORY_DT_FLOAT);
    wholememory_embedding_t embedding = nullptr;
    EMB_ASSERT_OK(wholememory_create_embedding(&embedding, &desc, comm, WHOLEMEMORY_MT_DISTRIBUTED,
                                               WHOLEMEMORY_ML_HOST, nullptr));
    wholememory_embedding_optimizer_t optimizer = nullptr;
    EMB_ASSERT_OK(wholememory_create_embedding_optimizer(&optimizer, WHOLEMEMORY_OPT_SGD));
    EMB_ASSERT_OK(wholememory_embedding_set_optimizer(embedding, optimizer));
    DeviceTensor indices(std::vector<int64_t>{1, context.rank == 1 ? 12 : 3}, WHOLEMEMORY_DT_INT64);
    DeviceTensor grads(std::vector<float>(4, 1.0F), WHOLEMEMORY_DT_FLOAT, 2);
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_embedding_gather_gradient_apply(embedding, indices.tensor(),
                                                          grads.tensor(), false, 0.1F, nullptr, 0));
    // Operands refused on one rank (grads of the wrong width): every rank fails at once.
    DeviceTensor narrow(std::vector<float>(context.rank == 0 ? 2 : 4, 1.0F), WHOLEMEMORY_DT_FLOAT,
                        context.rank == 0 ? 1 : 2);
    DeviceTensor two(std::vector<int64_t>{1, 3}, WHOLEMEMORY_DT_INT64);
    const auto started = std::chrono::steady_clock::now();
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_embedding_gather_gradient_apply(embedding, two.tensor(), narrow.tensor(),
                                                          false, 0.1F, nullptr, 0));
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
    DeviceTensor good(std::vector<int64_t>{1, 3}, WHOLEMEMORY_DT_INT64);
    EMB_EXPECT_OK(wholememory_embedding_gather_gradient_apply(
        embedding, good.tensor(), grads.tensor(), false, 0.1F, nullptr, 0));
    EMB_EXPECT_OK(wholememory_destroy_embedding(embedding));
    wholememory_destroy_embedding_optimizer(optimizer);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::embtest
