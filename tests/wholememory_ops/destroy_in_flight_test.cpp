// Destroying a table while another thread gathers from it: wholememory_destroy_tensor (and the
// wholememory_free under it) and wholememory_finalize wait for the operations in flight and for
// the work they enqueued, so no row copy runs over unmapped memory; every later use of the handle
// fails with WHOLEMEMORY_INVALID_INPUT. Each rank is a forked child, so a crash fails the test
// instead of the binary, and finalize stays inside one rank.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "tests/wholememory_ops/ops_test_support.h"

namespace memloom::opstest {
namespace {

using wmtest::ranks_on_nodes;
using wmtest::run_with_comm;

constexpr int64_t kRows = 4096;
constexpr int64_t kColumns = 64;
constexpr int64_t kGathered = 4096;

// A thread gathering kGathered random rows of `table` in a loop on its own stream, without
// waiting for the stream, so copies are still queued when the table goes. It stops at the first
// failed gather (or after a bound) and keeps every code it saw.
class GatherLoop {
 public:
  explicit GatherLoop(wholememory_tensor_t table)
      : indices_(kGathered * 8), output_(kGathered * kColumns * 4) {
    std::mt19937_64 rng(run_seed() + 90);
    const auto rows = random_indices(rng, kGathered, kRows, 0);
    indices_.upload(Bytes(reinterpret_cast<const uint8_t*>(rows.data()),
                          reinterpret_cast<const uint8_t*>(rows.data() + rows.size())));
    auto index_desc = array_desc(kGathered, 0, WHOLEMEMORY_DT_INT64);
    auto output_desc = matrix_desc(kGathered, kColumns, kColumns, 0, WHOLEMEMORY_DT_FLOAT);
    EXPECT_EQ(WHOLEMEMORY_SUCCESS,
              wholememory_make_tensor_from_pointer(&index_tensor_, indices_.data(), &index_desc));
    EXPECT_EQ(WHOLEMEMORY_SUCCESS,
              wholememory_make_tensor_from_pointer(&output_tensor_, output_.data(), &output_desc));
    EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_create(&stream_));
    thread_ = std::thread([this, table] {
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (std::chrono::steady_clock::now() < give_up) {
        const auto code =
            wholememory_gather(table, index_tensor_, output_tensor_, nullptr, stream_, 0);
        codes_.push_back(code);
        ++gathers_;
        if (code != WHOLEMEMORY_SUCCESS) return;
      }
    });
  }

  // Lets the loop get going (a backlog of copies on the stream) before the table goes.
  void wait_for_gathers(int count) const {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (gathers_.load() < count && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  // Joins the thread; every gather succeeded until one was refused as a dead handle.
  void join_and_check() {
    thread_.join();
    ASSERT_FALSE(codes_.empty());
    for (size_t i = 0; i + 1 < codes_.size(); ++i) EXPECT_EQ(WHOLEMEMORY_SUCCESS, codes_[i]);
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, codes_.back()) << "after " << codes_.size() << " gathers";
  }

  ~GatherLoop() {
    if (thread_.joinable()) thread_.join();
    // The stream's queued copies write the output: drain it before the buffers go.
    (void)memloom_stream_synchronize(stream_);
    EXPECT_EQ(MEMLOOM_STATUS_SUCCESS, memloom_stream_destroy(stream_));
    EXPECT_EQ(WHOLEMEMORY_SUCCESS, wholememory_destroy_tensor(index_tensor_));
    EXPECT_EQ(WHOLEMEMORY_SUCCESS, wholememory_destroy_tensor(output_tensor_));
  }

 private:
  UserBuffer indices_;
  UserBuffer output_;
  wholememory_tensor_t index_tensor_ = nullptr;
  wholememory_tensor_t output_tensor_ = nullptr;
  memloom_stream_t stream_ = nullptr;
  std::vector<wholememory_error_code_t> codes_;
  std::atomic<int> gathers_{0};
  std::thread thread_;
};

wholememory_tensor_t filled_table(wholememory_comm_t comm, wholememory_memory_type_t type) {
  auto desc = matrix_desc(kRows, kColumns, kColumns, 0, WHOLEMEMORY_DT_FLOAT);
  wholememory_tensor_t table = nullptr;
  EXPECT_EQ(WHOLEMEMORY_SUCCESS,
            wholememory_create_tensor(&table, &desc, comm, type, WHOLEMEMORY_ML_HOST));
  fill_table(table, seeded_values(run_seed() + 91, WHOLEMEMORY_DT_FLOAT), comm);
  return table;
}

TEST(DestroyInFlight, DestroyingATableWhileAThreadGathersFromItNeitherCrashesNorHangs) {
  auto results = run_with_comm(
      ranks_on_nodes(2, 1), [&](const testing::RankContext&, wholememory_comm_t comm) {
        for (auto type : {WHOLEMEMORY_MT_CONTINUOUS, WHOLEMEMORY_MT_CHUNKED}) {
          wholememory_tensor_t table = filled_table(comm, type);
          ASSERT_NE(nullptr, table);
          GatherLoop loop(table);
          loop.wait_for_gathers(20);
          const auto start = std::chrono::steady_clock::now();
          EXPECT_EQ(WHOLEMEMORY_SUCCESS, wholememory_destroy_tensor(table));
          EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
          loop.join_and_check();
          EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_destroy_tensor(table));
        }
      });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(DestroyInFlight, FinalizingWhileAThreadGathersNeitherCrashesNorHangs) {
  auto results = run_with_comm(
      ranks_on_nodes(2, 1), [&](const testing::RankContext&, wholememory_comm_t comm) {
        wholememory_tensor_t table = filled_table(comm, WHOLEMEMORY_MT_CONTINUOUS);
        ASSERT_NE(nullptr, table);
        const wholememory_handle_t handle = wholememory_tensor_get_memory_handle(table);
        GatherLoop loop(table);
        loop.wait_for_gathers(20);
        const auto start = std::chrono::steady_clock::now();
        EXPECT_EQ(WHOLEMEMORY_SUCCESS, wholememory_finalize());
        EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
        loop.join_and_check();
        EXPECT_EQ(0u, wholememory_get_total_size(handle));
        EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_free(handle));
      });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(DestroyInFlight, EveryUseOfAFreedHandleIsRefused) {
  auto results = run_with_comm(ranks_on_nodes(2, 1), [&](const testing::RankContext&,
                                                         wholememory_comm_t comm) {
    wholememory_tensor_t table = filled_table(comm, WHOLEMEMORY_MT_CHUNKED);
    ASSERT_NE(nullptr, table);
    const wholememory_handle_t handle = wholememory_tensor_get_memory_handle(table);
    int64_t starts[2] = {1, -1}, ends[2] = {kRows - 1, -1};
    wholememory_tensor_t sub = nullptr, view = nullptr;
    OPS_ASSERT_OK(wholememory_tensor_get_subtensor(table, starts, ends, &sub));
    auto desc = matrix_desc(kRows, kColumns, kColumns, 0, WHOLEMEMORY_DT_FLOAT);
    OPS_ASSERT_OK(wholememory_make_tensor_from_handle(&view, handle, &desc));
    OPS_ASSERT_OK(wholememory_destroy_tensor(table));

    // Tensors that shared the freed memory stay registered, and refuse every use of it.
    UserBuffer indices(8), output(kColumns * 4);
    indices.upload(Bytes(8, 0));
    auto index_desc = array_desc(1, 0, WHOLEMEMORY_DT_INT64);
    auto output_desc = matrix_desc(1, kColumns, kColumns, 0, WHOLEMEMORY_DT_FLOAT);
    wholememory_tensor_t index_tensor = nullptr, output_tensor = nullptr;
    OPS_ASSERT_OK(wholememory_make_tensor_from_pointer(&index_tensor, indices.data(), &index_desc));
    OPS_ASSERT_OK(
        wholememory_make_tensor_from_pointer(&output_tensor, output.data(), &output_desc));
    for (auto tensor : {sub, view}) {
      EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
                wholememory_gather(tensor, index_tensor, output_tensor, nullptr, nullptr, 0));
      EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
                wholememory_scatter(output_tensor, index_tensor, tensor, nullptr, nullptr, 0));
      size_t value = 0;
      EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
                wholememory_tensor_get_local_entry_count(&value, tensor));
      wholememory_gref_t gref{};
      EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_tensor_get_global_reference(tensor, &gref));
      EXPECT_EQ(nullptr, wholememory_tensor_get_data_pointer(tensor));
    }
    wholememory_tensor_t local = nullptr;  // (the sub-tensor starts past entry 0: refused anyway)
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_tensor_map_local_tensor(view, &local));
    EXPECT_EQ(0u, wholememory_get_total_size(handle));
    void* pointer = nullptr;
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_get_global_pointer(&pointer, handle));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_store_to_file(handle, 0, 4, 4, "/dev/null"));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_free(handle));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_destroy_tensor(table));
    OPS_EXPECT_OK(wholememory_destroy_tensor(sub));
    OPS_EXPECT_OK(wholememory_destroy_tensor(view));
    OPS_EXPECT_OK(wholememory_destroy_tensor(index_tensor));
    OPS_EXPECT_OK(wholememory_destroy_tensor(output_tensor));
  });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::opstest
