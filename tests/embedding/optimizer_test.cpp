// Every sparse optimizer against a dense reference (embedding_test_support.h) over several steps:
// FLOAT, HALF and BF16 tables, dimensions 1, 7, 31, 32, 33 and 129, 4 ranks over 2 emulated
// nodes with an uneven partition, duplicate indices within a rank and across ranks, negative
// indices skipped; the optimizer states checked too.
#include <gtest/gtest.h>

#include <random>

#include "tests/embedding/embedding_test_support.h"

namespace memloom::embtest {
namespace {

using wmtest::ranks_on_nodes;
using wmtest::run_with_comm;

const std::vector<int64_t> kDims = {1, 7, 31, 32, 33, 129};
const std::vector<wholememory_dtype_t> kDtypes = {WHOLEMEMORY_DT_FLOAT, WHOLEMEMORY_DT_HALF,
                                                  WHOLEMEMORY_DT_BF16};

std::map<std::string, float> parameters_of(wholememory_optimizer_type_t type, bool adam_w) {
  switch (type) {
    case WHOLEMEMORY_OPT_SGD:
      return {{"weight_decay", 0.01F}};
    case WHOLEMEMORY_OPT_LAZY_ADAM:
      return {{"weight_decay", 0.01F},
              {"epsilon", 1e-6F},
              {"beta1", 0.8F},
              {"beta2", 0.95F},
              {"adam_w", adam_w ? 1.0F : 0.0F}};
    case WHOLEMEMORY_OPT_RMSPROP:
      return {{"weight_decay", 0.01F}, {"epsilon", 1e-6F}, {"alpha", 0.9F}};
    default:
      return {{"weight_decay", 0.01F}, {"epsilon", 1e-6F}};
  }
}

// Rank r's batch of step s: duplicates inside it, and rows every rank names (0 and 1).
void batch_of(int rank, int step, int64_t rows, int64_t dim, std::vector<int64_t>* indices,
              std::vector<float>* grads) {
  std::mt19937_64 rng(1000u * static_cast<unsigned>(step) + static_cast<unsigned>(rank));
  std::uniform_int_distribution<int64_t> row(0, rows - 1);
  std::uniform_real_distribution<float> value(-1.0F, 1.0F);
  indices->assign({0, 1, row(rng), row(rng), row(rng), -1});
  const int64_t again = (*indices)[2];
  for (int k = 0; k < 10; ++k) indices->push_back(row(rng));
  indices->push_back(again);  // the same row twice in one list
  grads->resize(indices->size() * static_cast<size_t>(dim));
  for (float& g : *grads) g = value(rng);
}

float tolerance_of(wholememory_dtype_t dtype) {
  // Identical float arithmetic in the same order: only a different rounding of a sum or a
  // square root could differ, by an ulp of the table's type.
  switch (dtype) {
    case WHOLEMEMORY_DT_HALF:
      return 1.0F / 512;
    case WHOLEMEMORY_DT_BF16:
      return 1.0F / 64;
    default:
      return 2e-6F;
  }
}

struct Setup {
  wholememory_memory_type_t type;
  wholememory_memory_location_t location;
  bool uneven;
};

void run_optimizer(const testing::RankContext& context, wholememory_comm_t comm,
                   wholememory_optimizer_type_t type, bool adam_w, const Setup& setup,
                   const std::vector<int64_t>& dims,
                   const std::vector<wholememory_dtype_t>& dtypes) {
  const int64_t rows = 40;
  const int world = context.world_size;
  for (const auto dtype : dtypes) {
    for (const int64_t dim : dims) {
      SCOPED_TRACE("dtype " + std::to_string(dtype) + " dim " + std::to_string(dim));
      auto desc = opstest::matrix_desc(rows, dim, dim, 0, dtype);
      std::vector<size_t> partition;
      if (setup.uneven && world == 4) partition = {7, 13, 11, 9};
      wholememory_embedding_t embedding = nullptr;
      ASSERT_EQ(WHOLEMEMORY_SUCCESS, wholememory_create_embedding(
                                         &embedding, &desc, comm, setup.type, setup.location,
                                         nullptr, partition.empty() ? nullptr : partition.data()));
      wholememory_embedding_optimizer_t optimizer = nullptr;
      EMB_ASSERT_OK(wholememory_create_embedding_optimizer(&optimizer, type));
      auto parameters = parameters_of(type, adam_w);
      for (auto& [name, value] : parameters) {
        EMB_ASSERT_OK(wholememory_optimizer_set_parameter(optimizer, name.c_str(), &value));
      }
      EMB_ASSERT_OK(wholememory_embedding_set_optimizer(embedding, optimizer));
      std::vector<float> initial(static_cast<size_t>(rows * dim));
      for (size_t i = 0; i < initial.size(); ++i) initial[i] = 0.5F - 0.013F * (i % 77);
      scatter_floats(wholememory_embedding_get_embedding_tensor(embedding), initial, dim,
                     context.rank, world, comm);
      DenseReference reference(type, parameters, initial, dim, dtype);
      std::vector<int64_t> all(rows);
      for (int64_t r = 0; r < rows; ++r) all[r] = r;
      for (int step = 0; step < 3; ++step) {
        std::vector<std::vector<int64_t>> indices(world);
        std::vector<std::vector<float>> grads(world);
        for (int r = 0; r < world; ++r) batch_of(r, step, rows, dim, &indices[r], &grads[r]);
        DeviceTensor my_indices(indices[context.rank], WHOLEMEMORY_DT_INT64);
        DeviceTensor my_grads(grads[context.rank], WHOLEMEMORY_DT_FLOAT, dim);
        const float lr = 0.1F / static_cast<float>(step + 1);
        ASSERT_EQ(WHOLEMEMORY_SUCCESS,
                  wholememory_embedding_gather_gradient_apply(
                      embedding, my_indices.tensor(), my_grads.tensor(), true, lr, nullptr, 0));
        reference.step(indices, grads, lr);
        EMB_ASSERT_OK(wholememory_communicator_barrier(comm));
        expect_near_all(reference.weight, embedding_gather_floats(embedding, all, dim),
                        tolerance_of(dtype), "weights after step " + std::to_string(step));
      }
      const char* const* names = wholememory_embedding_get_optimizer_state_names(embedding);
      ASSERT_NE(nullptr, names);
      for (; *names != nullptr; ++names) {
        const std::string name = *names;
        wholememory_tensor_t state = wholememory_embedding_get_optimizer_state(embedding, *names);
        ASSERT_NE(nullptr, state) << name;
        if (name == "beta12t") {
          expect_near_all(reference.beta, gather_floats(state, all, 2), 1e-6F, name);
        } else {
          expect_near_all(name == "m" ? reference.m : reference.v, gather_floats(state, all, dim),
                          dtype == WHOLEMEMORY_DT_FLOAT ? 1e-5F : 0.05F, name);
        }
      }
      EXPECT_EQ(nullptr, wholememory_embedding_get_optimizer_state(embedding, "no_such_state"));
      EMB_EXPECT_OK(wholememory_destroy_embedding(embedding));
      wholememory_destroy_embedding_optimizer(optimizer);
    }
  }
}

const Setup kTwoNodes{WHOLEMEMORY_MT_DISTRIBUTED, WHOLEMEMORY_ML_DEVICE, true};

TEST(EmbeddingOptimizer, SgdMatchesDenseReference) {
  auto results = run_with_comm(ranks_on_nodes(4, 2), [](const auto& context, auto comm) {
    run_optimizer(context, comm, WHOLEMEMORY_OPT_SGD, false, kTwoNodes, kDims, kDtypes);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(EmbeddingOptimizer, LazyAdamMatchesDenseReference) {
  auto results = run_with_comm(ranks_on_nodes(4, 2), [](const auto& context, auto comm) {
    run_optimizer(context, comm, WHOLEMEMORY_OPT_LAZY_ADAM, false, kTwoNodes, kDims, kDtypes);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(EmbeddingOptimizer, LazyAdamWMatchesDenseReference) {
  auto results = run_with_comm(ranks_on_nodes(4, 2), [](const auto& context, auto comm) {
    run_optimizer(context, comm, WHOLEMEMORY_OPT_LAZY_ADAM, true, kTwoNodes, {7, 33},
                  {WHOLEMEMORY_DT_FLOAT, WHOLEMEMORY_DT_BF16});
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(EmbeddingOptimizer, RmsPropMatchesDenseReference) {
  auto results = run_with_comm(ranks_on_nodes(4, 2), [](const auto& context, auto comm) {
    run_optimizer(context, comm, WHOLEMEMORY_OPT_RMSPROP, false, kTwoNodes, kDims, kDtypes);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(EmbeddingOptimizer, AdaGradMatchesDenseReference) {
  auto results = run_with_comm(ranks_on_nodes(4, 2), [](const auto& context, auto comm) {
    run_optimizer(context, comm, WHOLEMEMORY_OPT_ADAGRAD, false, kTwoNodes, kDims, kDtypes);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

// Every memory type and location a single node supports, and HIERARCHY over two nodes; host
// tables are updated where they are.
TEST(EmbeddingOptimizer, EveryMemoryTypeAndLocation) {
  auto one_node = run_with_comm(ranks_on_nodes(3, 1), [](const auto& context, auto comm) {
    for (const auto type :
         {WHOLEMEMORY_MT_CONTINUOUS, WHOLEMEMORY_MT_CHUNKED, WHOLEMEMORY_MT_DISTRIBUTED}) {
      for (const auto location : {WHOLEMEMORY_ML_DEVICE, WHOLEMEMORY_ML_HOST}) {
        SCOPED_TRACE("type " + std::to_string(type) + " location " + std::to_string(location));
        run_optimizer(context, comm, WHOLEMEMORY_OPT_LAZY_ADAM, false, {type, location, false}, {7},
                      {WHOLEMEMORY_DT_FLOAT});
      }
    }
  });
  EXPECT_ALL_RANKS_PASS(one_node);
  auto two_nodes = run_with_comm(ranks_on_nodes(4, 2), [](const auto& context, auto comm) {
    run_optimizer(context, comm, WHOLEMEMORY_OPT_ADAGRAD, false,
                  {WHOLEMEMORY_MT_HIERARCHY, WHOLEMEMORY_ML_HOST, true}, {33},
                  {WHOLEMEMORY_DT_HALF});
  });
  EXPECT_ALL_RANKS_PASS(two_nodes);
}

// WholeMemory's semantics for a row named several times in one call: the gradients are summed
// and the row takes one step (SGD, lr 1: w - (a + b + c); lazy Adam: one step of the sum, which
// differs from three steps).
TEST(EmbeddingOptimizer, DuplicatesAcrossRanksAreSummedIntoOneStep) {
  auto results = run_with_comm(ranks_on_nodes(2, 2), [](const auto& context, auto comm) {
    for (const auto type : {WHOLEMEMORY_OPT_SGD, WHOLEMEMORY_OPT_LAZY_ADAM}) {
      auto desc = opstest::matrix_desc(4, 1, 1, 0, WHOLEMEMORY_DT_FLOAT);
      wholememory_embedding_t embedding = nullptr;
      EMB_ASSERT_OK(wholememory_create_embedding(
          &embedding, &desc, comm, WHOLEMEMORY_MT_DISTRIBUTED, WHOLEMEMORY_ML_HOST, nullptr));
      wholememory_embedding_optimizer_t optimizer = nullptr;
      EMB_ASSERT_OK(wholememory_create_embedding_optimizer(&optimizer, type));
      EMB_ASSERT_OK(wholememory_embedding_set_optimizer(embedding, optimizer));
      scatter_floats(wholememory_embedding_get_embedding_tensor(embedding), {1, 1, 1, 1}, 1,
                     context.rank, 2, comm);
      // Rank 0 names row 3 twice (grads 1 and 2), rank 1 once (grad 4).
      const std::vector<int64_t> indices =
          context.rank == 0 ? std::vector<int64_t>{3, 3} : std::vector<int64_t>{3};
      const std::vector<float> grads =
          context.rank == 0 ? std::vector<float>{1, 2} : std::vector<float>{4};
      DeviceTensor list(indices, WHOLEMEMORY_DT_INT64);
      DeviceTensor grad(grads, WHOLEMEMORY_DT_FLOAT, 1);
      EMB_ASSERT_OK(wholememory_embedding_gather_gradient_apply(
          embedding, list.tensor(), grad.tensor(), false, 1.0F, nullptr, 0));
      EMB_ASSERT_OK(wholememory_communicator_barrier(comm));
      const auto now = embedding_gather_floats(embedding, {3}, 1);
      // Adam's first step moves by lr * m_hat / (sqrt(v_hat) + eps) = 1 whatever the gradient.
      EXPECT_FLOAT_EQ(type == WHOLEMEMORY_OPT_SGD ? 1.0F - 7.0F : 0.0F, now[0]);
      EMB_EXPECT_OK(wholememory_destroy_embedding(embedding));
      wholememory_destroy_embedding_optimizer(optimizer);
    }
  });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::embtest
