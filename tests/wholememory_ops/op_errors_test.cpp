// What must fail, and how: indices past the table (reported by the stream on mapped tables, by
// every rank's call on exchanging ones, rows of valid indices still copied where the call goes
// ahead), operands of the wrong kind or shape, and misuse of the stream API.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "src/core/platform_loader.h"
#include "tests/wholememory_ops/ops_test_support.h"

extern "C" int ops_c_header_check(void);

namespace memloom::opstest {
namespace {

using wmtest::ranks_on_nodes;
using wmtest::run_with_comm;

TEST(OpErrors, PublicHeadersCompileAsC) {
  EXPECT_EQ(0, ops_c_header_check());
}

// A gather of [2, rows + 5, 1] into a 3-row output of 4 columns, float.
struct SmallGather {
  UserBuffer indices{3 * 8};
  UserBuffer output{3 * 4 * 4};
  wholememory_tensor_t index_tensor = nullptr;
  wholememory_tensor_t output_tensor = nullptr;

  explicit SmallGather(int64_t rows) {
    const int64_t values[] = {2, rows + 5, 1};
    indices.upload(Bytes(reinterpret_cast<const uint8_t*>(values),
                         reinterpret_cast<const uint8_t*>(values) + sizeof(values)));
    output.upload(Bytes(3 * 4 * 4, 0));
    auto index_desc = array_desc(3, 0, WHOLEMEMORY_DT_INT64);
    auto output_desc = matrix_desc(3, 4, 4, 0, WHOLEMEMORY_DT_FLOAT);
    EXPECT_EQ(WHOLEMEMORY_SUCCESS,
              wholememory_make_tensor_from_pointer(&index_tensor, indices.data(), &index_desc));
    EXPECT_EQ(WHOLEMEMORY_SUCCESS,
              wholememory_make_tensor_from_pointer(&output_tensor, output.data(), &output_desc));
  }
  ~SmallGather() {
    EXPECT_EQ(WHOLEMEMORY_SUCCESS, wholememory_destroy_tensor(index_tensor));
    EXPECT_EQ(WHOLEMEMORY_SUCCESS, wholememory_destroy_tensor(output_tensor));
  }
};

TEST(OpErrors, IndexPastTheTableIsReportedByTheStreamOnMappedTables) {
  auto results = run_with_comm(
      ranks_on_nodes(2, 1), [&](const testing::RankContext&, wholememory_comm_t comm) {
        for (auto type : {WHOLEMEMORY_MT_CONTINUOUS, WHOLEMEMORY_MT_CHUNKED}) {
          auto desc = matrix_desc(10, 4, 4, 0, WHOLEMEMORY_DT_FLOAT);
          wholememory_tensor_t table = nullptr;
          OPS_ASSERT_OK(wholememory_create_tensor(&table, &desc, comm, type, WHOLEMEMORY_ML_HOST));
          const RootValue values = seeded_values(run_seed() + 60, WHOLEMEMORY_DT_FLOAT);
          fill_table(table, values, comm);
          memloom_stream_t stream = nullptr;
          ASSERT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_create(&stream));
          {
            SmallGather gather(10);
            OPS_EXPECT_OK(wholememory_gather(table, gather.index_tensor, gather.output_tensor,
                                             nullptr, stream));
            EXPECT_EQ(MEMLOOM_STATUS_INVALID_INPUT, memloom_stream_synchronize(stream));
            EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_synchronize(stream));  // reported once
            const Bytes out = gather.output.download();
            for (int c = 0; c < 4; ++c) {
              EXPECT_EQ(values(2, c), Bytes(out.begin() + c * 4, out.begin() + c * 4 + 4));
              EXPECT_EQ(Bytes(4, 0), Bytes(out.begin() + 16 + c * 4, out.begin() + 20 + c * 4));
              EXPECT_EQ(values(1, c), Bytes(out.begin() + 32 + c * 4, out.begin() + 36 + c * 4));
            }
            // Scatter reports the same way and writes nothing out of bounds.
            OPS_EXPECT_OK(wholememory_scatter(gather.output_tensor, gather.index_tensor, table,
                                              nullptr, stream));
            EXPECT_EQ(MEMLOOM_STATUS_INVALID_INPUT, memloom_stream_synchronize(stream));
          }
          EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_destroy(stream));
          OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
          OPS_EXPECT_OK(wholememory_destroy_tensor(table));
        }
      });
  EXPECT_ALL_RANKS_PASS(results);
}

// More operations in flight than the stream's ring of bad-index slots (64), the bad one early
// and clean ones after it: the error survives the slot's reuse and is reported once.
TEST(OpErrors, ABadIndexAmongManyOperationsInFlightIsReportedOnce) {
  auto results = run_with_comm(
      ranks_on_nodes(1, 1), [&](const testing::RankContext&, wholememory_comm_t comm) {
        auto desc = matrix_desc(10, 4, 4, 0, WHOLEMEMORY_DT_FLOAT);
        wholememory_tensor_t table = nullptr;
        OPS_ASSERT_OK(wholememory_create_tensor(&table, &desc, comm, WHOLEMEMORY_MT_CONTINUOUS,
                                                WHOLEMEMORY_ML_DEVICE));
        const RootValue values = seeded_values(run_seed() + 62, WHOLEMEMORY_DT_FLOAT);
        fill_table(table, values, comm);
        memloom_stream_t stream = nullptr;
        ASSERT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_create(&stream));
        {
          SmallGather bad(10);
          SmallGather good(-7);  // {2, -2, 1}: the negative index is skipped, not an error
          for (int i = 0; i < 200; ++i) {
            SmallGather& gather = i == 3 ? bad : good;
            OPS_EXPECT_OK(wholememory_gather(table, gather.index_tensor, gather.output_tensor,
                                             nullptr, stream));
          }
          EXPECT_EQ(MEMLOOM_STATUS_INVALID_INPUT, memloom_stream_synchronize(stream));
          EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_synchronize(stream));
          for (int i = 0; i < 100; ++i) {
            OPS_EXPECT_OK(
                wholememory_gather(table, good.index_tensor, good.output_tensor, nullptr, stream));
          }
          EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_synchronize(stream));
          const Bytes out = good.output.download();
          for (int c = 0; c < 4; ++c) {
            EXPECT_EQ(values(2, c), Bytes(out.begin() + c * 4, out.begin() + c * 4 + 4));
            EXPECT_EQ(values(1, c), Bytes(out.begin() + 32 + c * 4, out.begin() + 36 + c * 4));
          }
        }
        EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_destroy(stream));
        OPS_EXPECT_OK(wholememory_destroy_tensor(table));
      });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(OpErrors, IndexPastTheTableFailsEveryRankOfAnExchange) {
  auto results = run_with_comm(ranks_on_nodes(4, 2), [&](const testing::RankContext& me,
                                                         wholememory_comm_t comm) {
    for (auto type : {WHOLEMEMORY_MT_DISTRIBUTED, WHOLEMEMORY_MT_HIERARCHY}) {
      auto desc = matrix_desc(40, 4, 4, 0, WHOLEMEMORY_DT_FLOAT);
      wholememory_tensor_t table = nullptr;
      OPS_ASSERT_OK(wholememory_create_tensor(&table, &desc, comm, type, WHOLEMEMORY_ML_DEVICE));
      const RootValue values = seeded_values(run_seed() + 61, WHOLEMEMORY_DT_FLOAT);
      fill_table(table, values, comm);
      // Only rank 3 asks for a row past the end; every rank's call fails, none hangs.
      SmallGather gather(me.rank == 3 ? 40 : -7);
      const auto start = std::chrono::steady_clock::now();
      EXPECT_EQ(
          WHOLEMEMORY_INVALID_INPUT,
          wholememory_gather(table, gather.index_tensor, gather.output_tensor, nullptr, nullptr));
      EXPECT_EQ(
          WHOLEMEMORY_INVALID_INPUT,
          wholememory_scatter(gather.output_tensor, gather.index_tensor, table, nullptr, nullptr));
      EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
      EXPECT_EQ(Bytes(3 * 16, 0), gather.output.download());
      // The communicator still works afterwards.
      check_gather(table, {39, 0, 20}, {WHOLEMEMORY_DT_FLOAT}, values, nullptr);
      OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
      OPS_EXPECT_OK(wholememory_destroy_tensor(table));
    }
  });
  EXPECT_ALL_RANKS_PASS(results);
}

// A rank whose operands are refused before the exchange starts tells the others, who are already
// waiting in it: every rank fails at once instead of at its deadline.
TEST(OpErrors, OperandsRefusedOnOneRankFailEveryRankOfAnExchange) {
  auto results = run_with_comm(ranks_on_nodes(4, 2), [&](const testing::RankContext& me,
                                                         wholememory_comm_t comm) {
    for (auto type : {WHOLEMEMORY_MT_DISTRIBUTED, WHOLEMEMORY_MT_HIERARCHY}) {
      auto desc = matrix_desc(40, 4, 4, 0, WHOLEMEMORY_DT_FLOAT);
      wholememory_tensor_t table = nullptr;
      OPS_ASSERT_OK(wholememory_create_tensor(&table, &desc, comm, type, WHOLEMEMORY_ML_HOST));
      SmallGather gather(-7);
      auto narrow = matrix_desc(3, 3, 4, 0, WHOLEMEMORY_DT_FLOAT);
      wholememory_tensor_t wrong = nullptr;
      OPS_ASSERT_OK(wholememory_make_tensor_from_pointer(&wrong, gather.output.data(), &narrow));
      const auto start = std::chrono::steady_clock::now();
      EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
                wholememory_gather(table, gather.index_tensor,
                                   me.rank == 2 ? wrong : gather.output_tensor, nullptr, nullptr));
      EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
      OPS_EXPECT_OK(wholememory_destroy_tensor(wrong));
      OPS_EXPECT_OK(wholememory_communicator_barrier(comm));
      OPS_EXPECT_OK(wholememory_destroy_tensor(table));
    }
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(OpErrors, OperandsOfTheWrongKindOrShapeAreRefused) {
  auto results = run_with_comm(ranks_on_nodes(1, 1), [&](const testing::RankContext&,
                                                         wholememory_comm_t comm) {
    auto desc = matrix_desc(10, 4, 4, 0, WHOLEMEMORY_DT_FLOAT);
    wholememory_tensor_t table = nullptr;
    OPS_ASSERT_OK(wholememory_create_tensor(&table, &desc, comm, WHOLEMEMORY_MT_CONTINUOUS,
                                            WHOLEMEMORY_ML_HOST));
    SmallGather gather(10);
    auto refuse = [&](wholememory_tensor_t t, wholememory_tensor_t i, wholememory_tensor_t o,
                      const char* what) {
      EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_gather(t, i, o, nullptr, nullptr)) << what;
    };
    refuse(table, table, gather.output_tensor, "a WholeMemory tensor as indices");
    refuse(table, gather.index_tensor, table, "a WholeMemory tensor as output");
    refuse(nullptr, gather.index_tensor, gather.output_tensor, "no table");
    auto make = [&](void* storage, wholememory_tensor_description_t d) {
      wholememory_tensor_t t = nullptr;
      EXPECT_EQ(WHOLEMEMORY_SUCCESS, wholememory_make_tensor_from_pointer(&t, storage, &d));
      return t;
    };
    std::vector<wholememory_tensor_t> made;
    made.push_back(make(gather.indices.data(), array_desc(3, 0, WHOLEMEMORY_DT_FLOAT)));
    refuse(table, made.back(), gather.output_tensor, "float indices");
    made.push_back(make(gather.indices.data(), matrix_desc(3, 1, 1, 0, WHOLEMEMORY_DT_INT64)));
    refuse(table, made.back(), gather.output_tensor, "2-D indices");
    made.push_back(make(gather.output.data(), matrix_desc(2, 4, 4, 0, WHOLEMEMORY_DT_FLOAT)));
    refuse(table, gather.index_tensor, made.back(), "too few output rows");
    made.push_back(make(gather.output.data(), matrix_desc(3, 3, 4, 0, WHOLEMEMORY_DT_FLOAT)));
    refuse(table, gather.index_tensor, made.back(), "other columns");
    made.push_back(make(gather.output.data(), matrix_desc(3, 4, 4, 0, WHOLEMEMORY_DT_INT)));
    refuse(table, gather.index_tensor, made.back(), "an integer output of a float table");
    made.push_back(make(gather.output.data(), array_desc(12, 0, WHOLEMEMORY_DT_FLOAT)));
    refuse(table, gather.index_tensor, made.back(), "a 1-D output of a 2-D table");
    made.push_back(make(nullptr, matrix_desc(3, 4, 4, 0, WHOLEMEMORY_DT_FLOAT)));
    refuse(table, gather.index_tensor, made.back(), "an output without memory");
    made.push_back(make(static_cast<char*>(gather.output.data()) + 2,
                        matrix_desc(3, 4, 4, 0, WHOLEMEMORY_DT_FLOAT)));
    refuse(table, gather.index_tensor, made.back(), "a misaligned output");
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_scatter(gather.output_tensor, table, table, nullptr, nullptr));
    wholememory_env_func_t incomplete = *get_default_env_func();
    incomplete.temporary_fns.malloc_fn = nullptr;
    for (auto t : made) OPS_EXPECT_OK(wholememory_destroy_tensor(t));
    const Bytes untouched = gather.output.download();
    EXPECT_EQ(Bytes(3 * 16, 0), untouched);
    OPS_EXPECT_OK(wholememory_destroy_tensor(table));

    // Exchanging tables need temporary memory: an environment without malloc is refused.
    OPS_ASSERT_OK(wholememory_create_tensor(&table, &desc, comm, WHOLEMEMORY_MT_DISTRIBUTED,
                                            WHOLEMEMORY_ML_HOST));
    SmallGather valid(-7);  // indices 2, -2, 1
    EXPECT_EQ(
        WHOLEMEMORY_INVALID_INPUT,
        wholememory_gather(table, valid.index_tensor, valid.output_tensor, &incomplete, nullptr));
    OPS_EXPECT_OK(wholememory_destroy_tensor(table));
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(OpErrors, StreamApiMisuse) {
  auto results =
      run_with_comm(ranks_on_nodes(1, 1), [&](const testing::RankContext&, wholememory_comm_t) {
        EXPECT_EQ(MEMLOOM_STATUS_INVALID_INPUT, memloom_stream_create(nullptr));
        memloom_stream_t stream = nullptr;
        ASSERT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_create(&stream));
        EXPECT_NE(nullptr, stream);
        EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_synchronize(stream));
        EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_synchronize(nullptr));
        EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_destroy(stream));
        EXPECT_EQ(MEMLOOM_STATUS_INVALID_INPUT, memloom_stream_destroy(stream));
        EXPECT_EQ(MEMLOOM_STATUS_INVALID_INPUT, memloom_stream_destroy(nullptr));
        // Any other handle is refused where the backend cannot adopt native streams (CUDA can).
        if (core::platform().name() == "emulated") {
          int not_a_stream = 0;
          EXPECT_EQ(MEMLOOM_STATUS_INVALID_INPUT, memloom_stream_synchronize(&not_a_stream));
        }
      });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::opstest
