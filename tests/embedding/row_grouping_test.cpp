// The gradient apply's grouping of requests by row on the device (row_grouping.h): one rank, whose
// whole apply stays on the device, and two ranks, whose routed requests are grouped there, each
// with batches where a few rows take most of the indices; against the dense reference
// (embedding_test_support.h), which sums a row's gradients in list order as WholeMemory's
// duplicate semantics (summed, one step per row) and memloom's fixed order say. On the CUDA
// backend this is CUB's radix sort against the host reference; on the emulated one the CPU
// grouping (its dense and its sparse path).
#include <gtest/gtest.h>

#include <random>

#include "tests/embedding/embedding_test_support.h"

namespace memloom::embtest {
namespace {

using wmtest::ranks_on_nodes;
using wmtest::run_with_comm;

// A batch of `count` indices: nine in ten from `hot` rows (each named many times), the rest from
// the whole table, every 97th negative (skipped).
std::vector<int64_t> skewed_batch(uint64_t seed, size_t count, int64_t rows, int64_t hot) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> any(0, rows - 1);
  std::uniform_int_distribution<int64_t> hot_row(0, hot - 1);
  std::vector<int64_t> indices(count);
  for (size_t i = 0; i < count; ++i) {
    if (i % 97 == 96) {
      indices[i] = -1;
    } else {
      indices[i] = i % 10 == 0 ? any(rng) : hot_row(rng) * (rows / hot);
    }
  }
  return indices;
}

std::vector<float> random_grads(uint64_t seed, size_t count) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> value(-1.0F, 1.0F);
  std::vector<float> grads(count);
  for (float& g : grads) g = value(rng);
  return grads;
}

struct Case {
  wholememory_optimizer_type_t type;
  wholememory_dtype_t dtype;
  int64_t rows, dim;
  size_t batch;
  int64_t hot;
  wholememory_dtype_t index_type;
};

std::map<std::string, float> parameters_of(wholememory_optimizer_type_t type) {
  if (type == WHOLEMEMORY_OPT_LAZY_ADAM) {
    return {{"weight_decay", 0.01F}, {"epsilon", 1e-6F}, {"beta1", 0.8F}, {"beta2", 0.95F}};
  }
  if (type == WHOLEMEMORY_OPT_RMSPROP) {
    return {{"weight_decay", 0.01F}, {"epsilon", 1e-6F}, {"alpha", 0.9F}};
  }
  if (type == WHOLEMEMORY_OPT_SGD) return {{"weight_decay", 0.01F}};
  return {{"weight_decay", 0.01F}, {"epsilon", 1e-6F}};
}

// Three steps of `c` on every rank of `comm`; weights and states against the reference.
void run_case(const testing::RankContext& context, wholememory_comm_t comm, const Case& c) {
  SCOPED_TRACE("optimizer " + std::to_string(c.type) + " dtype " + std::to_string(c.dtype) +
               " dim " + std::to_string(c.dim) + " batch " + std::to_string(c.batch));
  const int world = context.world_size;
  auto desc = opstest::matrix_desc(c.rows, c.dim, c.dim, 0, c.dtype);
  wholememory_embedding_t embedding = nullptr;
  EMB_ASSERT_OK(wholememory_create_embedding(&embedding, &desc, comm, WHOLEMEMORY_MT_CONTINUOUS,
                                             WHOLEMEMORY_ML_DEVICE, nullptr));
  wholememory_embedding_optimizer_t optimizer = nullptr;
  EMB_ASSERT_OK(wholememory_create_embedding_optimizer(&optimizer, c.type));
  auto parameters = parameters_of(c.type);
  for (auto& [name, value] : parameters) {
    EMB_ASSERT_OK(wholememory_optimizer_set_parameter(optimizer, name.c_str(), &value));
  }
  EMB_ASSERT_OK(wholememory_embedding_set_optimizer(embedding, optimizer));
  std::vector<float> initial(static_cast<size_t>(c.rows * c.dim));
  for (size_t i = 0; i < initial.size(); ++i) initial[i] = 0.5F - 0.013F * (i % 77);
  scatter_floats(wholememory_embedding_get_embedding_tensor(embedding), initial, c.dim,
                 context.rank, world, comm);
  DenseReference reference(c.type, parameters, initial, c.dim, c.dtype);
  std::vector<int64_t> all(static_cast<size_t>(c.rows));
  for (int64_t r = 0; r < c.rows; ++r) all[static_cast<size_t>(r)] = r;
  for (int step = 0; step < 3; ++step) {
    std::vector<std::vector<int64_t>> indices(world);
    std::vector<std::vector<float>> grads(world);
    for (int r = 0; r < world; ++r) {
      const auto seed = static_cast<uint64_t>(100 * step + r);
      indices[r] = skewed_batch(seed, c.batch, c.rows, c.hot);
      grads[r] = random_grads(seed + 7, c.batch * static_cast<size_t>(c.dim));
    }
    const auto& mine = indices[context.rank];
    std::vector<int32_t> narrow(mine.begin(), mine.end());
    DeviceTensor my_indices = c.index_type == WHOLEMEMORY_DT_INT
                                  ? DeviceTensor(narrow, WHOLEMEMORY_DT_INT)
                                  : DeviceTensor(mine, WHOLEMEMORY_DT_INT64);
    DeviceTensor my_grads(grads[context.rank], WHOLEMEMORY_DT_FLOAT, c.dim);
    const float lr = 0.05F;
    EMB_ASSERT_OK(wholememory_embedding_gather_gradient_apply(
        embedding, my_indices.tensor(), my_grads.tensor(), false, lr, nullptr, 0));
    reference.step(indices, grads, lr);
    EMB_ASSERT_OK(wholememory_communicator_barrier(comm));
    // The reference sums in the same order, so only the rounding of a square root (or of the
    // table's type) may differ.
    const float tolerance = c.dtype == WHOLEMEMORY_DT_FLOAT ? 2e-6F : 1.0F / 512;
    expect_near_all(reference.weight, embedding_gather_floats(embedding, all, c.dim), tolerance,
                    "weights after step " + std::to_string(step));
  }
  if (c.type == WHOLEMEMORY_OPT_LAZY_ADAM) {
    expect_near_all(
        reference.beta,
        gather_floats(wholememory_embedding_get_optimizer_state(embedding, "beta12t"), all, 2),
        1e-6F, "beta12t");
    expect_near_all(
        reference.v,
        gather_floats(wholememory_embedding_get_optimizer_state(embedding, "v"), all, c.dim),
        c.dtype == WHOLEMEMORY_DT_FLOAT ? 1e-5F : 0.05F, "v");
  }
  EMB_EXPECT_OK(wholememory_destroy_embedding(embedding));
  wholememory_destroy_embedding_optimizer(optimizer);
}

// Thousands of requests on a few dozen rows: each hot row sums about 150 gradients.
TEST(EmbeddingRowGrouping, OneRankManyDuplicatesMatchTheReference) {
  auto results = run_with_comm(ranks_on_nodes(1, 1), [](const auto& context, auto comm) {
    for (const auto type : {WHOLEMEMORY_OPT_SGD, WHOLEMEMORY_OPT_LAZY_ADAM, WHOLEMEMORY_OPT_RMSPROP,
                            WHOLEMEMORY_OPT_ADAGRAD}) {
      run_case(context, comm,
               {type, WHOLEMEMORY_DT_FLOAT, 3000, 33, 6000, 40, WHOLEMEMORY_DT_INT64});
    }
    run_case(
        context, comm,
        {WHOLEMEMORY_OPT_LAZY_ADAM, WHOLEMEMORY_DT_HALF, 3000, 128, 6000, 40, WHOLEMEMORY_DT_INT});
    // A FLOAT width of whole 16-byte pieces past one 128-column pass: the GPU's vector pass, twice
    // per row, the second partly outside the row.
    run_case(context, comm,
             {WHOLEMEMORY_OPT_LAZY_ADAM, WHOLEMEMORY_DT_FLOAT, 3000, 132, 6000, 40,
              WHOLEMEMORY_DT_INT64});
    run_case(
        context, comm,
        {WHOLEMEMORY_OPT_LAZY_ADAM, WHOLEMEMORY_DT_FLOAT, 1000, 7, 20000, 3, WHOLEMEMORY_DT_INT});
  });
  EXPECT_ALL_RANKS_PASS(results);
}

// A small batch in a large table: few rows of a wide key range (the CPU grouping's sorting path).
TEST(EmbeddingRowGrouping, OneRankSmallBatchInALargeTable) {
  auto results = run_with_comm(ranks_on_nodes(1, 1), [](const auto& context, auto comm) {
    run_case(
        context, comm,
        {WHOLEMEMORY_OPT_LAZY_ADAM, WHOLEMEMORY_DT_FLOAT, 100000, 4, 300, 8, WHOLEMEMORY_DT_INT64});
  });
  EXPECT_ALL_RANKS_PASS(results);
}

// Two ranks: each owner groups the requests it received and its own, in rank order then list
// order.
TEST(EmbeddingRowGrouping, TwoRanksManyDuplicatesMatchTheReference) {
  auto results = run_with_comm(ranks_on_nodes(2, 1), [](const auto& context, auto comm) {
    run_case(context, comm,
             {WHOLEMEMORY_OPT_LAZY_ADAM, WHOLEMEMORY_DT_FLOAT, 2000, 33, 5000, 30,
              WHOLEMEMORY_DT_INT64});
    run_case(context, comm,
             {WHOLEMEMORY_OPT_SGD, WHOLEMEMORY_DT_FLOAT, 2000, 33, 5000, 30, WHOLEMEMORY_DT_INT});
  });
  EXPECT_ALL_RANKS_PASS(results);
}

// One rank finds a bad index on the device: the call fails and changes nothing, for either index
// type and wherever the bad index is; a list of skipped indices only changes nothing either.
TEST(EmbeddingRowGrouping, OneRankBadIndexChangesNothing) {
  auto results = run_with_comm(ranks_on_nodes(1, 1), [](const auto& context, auto comm) {
    const int64_t rows = 50, dim = 3;
    auto desc = opstest::matrix_desc(rows, dim, dim, 0, WHOLEMEMORY_DT_FLOAT);
    wholememory_embedding_t embedding = nullptr;
    EMB_ASSERT_OK(wholememory_create_embedding(&embedding, &desc, comm, WHOLEMEMORY_MT_CONTINUOUS,
                                               WHOLEMEMORY_ML_DEVICE, nullptr));
    wholememory_embedding_optimizer_t optimizer = nullptr;
    EMB_ASSERT_OK(wholememory_create_embedding_optimizer(&optimizer, WHOLEMEMORY_OPT_SGD));
    EMB_ASSERT_OK(wholememory_embedding_set_optimizer(embedding, optimizer));
    std::vector<float> initial(static_cast<size_t>(rows * dim), 1.0F);
    scatter_floats(wholememory_embedding_get_embedding_tensor(embedding), initial, dim,
                   context.rank, 1, comm);
    std::vector<int64_t> all(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) all[static_cast<size_t>(r)] = r;
    const std::vector<int64_t> list = {3, 3, 7, rows + 5, 1, rows, 3};
    DeviceTensor grads(std::vector<float>(list.size() * dim, 1.0F), WHOLEMEMORY_DT_FLOAT, dim);
    DeviceTensor wide(list, WHOLEMEMORY_DT_INT64);
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_embedding_gather_gradient_apply(embedding, wide.tensor(), grads.tensor(),
                                                          false, 0.1F, nullptr, 0));
    DeviceTensor narrow(std::vector<int32_t>(list.begin(), list.end()), WHOLEMEMORY_DT_INT);
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_embedding_gather_gradient_apply(embedding, narrow.tensor(),
                                                          grads.tensor(), false, 0.1F, nullptr, 0));
    expect_near_all(initial, embedding_gather_floats(embedding, all, dim), 0, "table");
    // A list of negative indices only asks for nothing: no group, no change.
    DeviceTensor nothing(std::vector<int64_t>(list.size(), -1), WHOLEMEMORY_DT_INT64);
    EMB_ASSERT_OK(wholememory_embedding_gather_gradient_apply(
        embedding, nothing.tensor(), grads.tensor(), false, 0.1F, nullptr, 0));
    expect_near_all(initial, embedding_gather_floats(embedding, all, dim), 0, "table");
    // The same list without its bad indices is applied.
    DeviceTensor good(std::vector<int64_t>{3, 3, 7, -1, 1, -1, 3}, WHOLEMEMORY_DT_INT64);
    EMB_ASSERT_OK(wholememory_embedding_gather_gradient_apply(
        embedding, good.tensor(), grads.tensor(), false, 0.1F, nullptr, 0));
    const auto now = embedding_gather_floats(embedding, {1, 3, 7, 0}, dim);
    // SGD without weight decay: w - lr * (sum of the row's gradients).
    EXPECT_FLOAT_EQ(1.0F - 0.1F, now[0]);
    EXPECT_FLOAT_EQ(1.0F - 0.1F * 3, now[dim]);
    EXPECT_FLOAT_EQ(1.0F - 0.1F, now[2 * dim]);
    EXPECT_FLOAT_EQ(1.0F, now[3 * dim]);
    EMB_EXPECT_OK(wholememory_destroy_embedding(embedding));
    wholememory_destroy_embedding_optimizer(optimizer);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::embtest
