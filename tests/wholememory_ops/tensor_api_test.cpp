// The tensor API: creation over every memory type, queries of descriptions and partitions,
// tensors from pointers and from handles, sub-tensors, local tensors, and bad input.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "tests/wholememory_ops/ops_test_support.h"

namespace memloom::opstest {
namespace {

using wmtest::ranks_on_nodes;
using wmtest::run_with_comm;

TEST(TensorApi, CreateQueryAndDestroyOnEveryType) {
  auto results = run_with_comm(
      ranks_on_nodes(2, 1), [&](const testing::RankContext& me, wholememory_comm_t comm) {
        for (auto type : {WHOLEMEMORY_MT_CONTINUOUS, WHOLEMEMORY_MT_CHUNKED,
                          WHOLEMEMORY_MT_DISTRIBUTED, WHOLEMEMORY_MT_HIERARCHY}) {
          SCOPED_TRACE(type);
          const int64_t before = get_wholememory_tensor_count();
          auto desc = matrix_desc(37, 5, 7, 0, WHOLEMEMORY_DT_FLOAT);
          wholememory_tensor_t tensor = nullptr;
          OPS_ASSERT_OK(wholememory_create_tensor(&tensor, &desc, comm, type, WHOLEMEMORY_ML_HOST));
          EXPECT_EQ(before + 1, get_wholememory_tensor_count());
          EXPECT_TRUE(wholememory_tensor_has_handle(tensor));
          wholememory_handle_t handle = wholememory_tensor_get_memory_handle(tensor);
          ASSERT_NE(nullptr, handle);
          EXPECT_EQ(37u * 7 * 4, wholememory_get_total_size(handle));
          EXPECT_EQ(7u * 4, wholememory_get_data_granularity(handle));
          const auto* got = wholememory_tensor_get_tensor_description(tensor);
          ASSERT_NE(nullptr, got);
          EXPECT_EQ(2, got->dim);
          EXPECT_EQ(37, got->sizes[0]);
          EXPECT_EQ(5, got->sizes[1]);
          EXPECT_EQ(7, got->strides[0]);
          EXPECT_EQ(tensor, wholememory_tensor_get_root(tensor));

          size_t offsets[3], sizes[2], count = 0, start = 0;
          OPS_ASSERT_OK(wholememory_tensor_get_entry_offsets(offsets, tensor));
          OPS_ASSERT_OK(wholememory_tensor_get_entry_partition_sizes(sizes, tensor));
          EXPECT_EQ((std::vector<size_t>{0, 19, 37}), std::vector<size_t>(offsets, offsets + 3));
          EXPECT_EQ((std::vector<size_t>{19, 18}), std::vector<size_t>(sizes, sizes + 2));
          OPS_ASSERT_OK(wholememory_tensor_get_local_entry_count(&count, tensor));
          OPS_ASSERT_OK(wholememory_tensor_get_local_entry_start(&start, tensor));
          EXPECT_EQ(sizes[me.rank], count);
          EXPECT_EQ(offsets[me.rank], start);

          wholememory_tensor_t local = nullptr;
          OPS_ASSERT_OK(wholememory_tensor_map_local_tensor(tensor, &local));
          EXPECT_FALSE(wholememory_tensor_has_handle(local));
          EXPECT_EQ(static_cast<int64_t>(count),
                    wholememory_tensor_get_tensor_description(local)->sizes[0]);
          void* local_pointer = nullptr;
          OPS_ASSERT_OK(wholememory_get_local_memory(&local_pointer, nullptr, nullptr, handle));
          EXPECT_EQ(local_pointer, wholememory_tensor_get_data_pointer(local));
          OPS_EXPECT_OK(wholememory_destroy_tensor(local));

          void* data = wholememory_tensor_get_data_pointer(tensor);
          wholememory_gref_t gref{};
          if (type == WHOLEMEMORY_MT_CONTINUOUS) {
            void* global = nullptr;
            OPS_ASSERT_OK(wholememory_get_global_pointer(&global, handle));
            EXPECT_EQ(global, data);
          } else {
            EXPECT_EQ(nullptr, data);
          }
          const auto gref_status = wholememory_tensor_get_global_reference(tensor, &gref);
          EXPECT_EQ(
              type == WHOLEMEMORY_MT_DISTRIBUTED ? WHOLEMEMORY_INVALID_INPUT : WHOLEMEMORY_SUCCESS,
              gref_status);
          OPS_EXPECT_OK(wholememory_destroy_tensor(tensor));
          EXPECT_EQ(before, get_wholememory_tensor_count());
          EXPECT_EQ(nullptr, wholememory_tensor_get_tensor_description(tensor));
          EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_destroy_tensor(tensor));
        }
      });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(TensorApi, CustomPartitionAndOneDimensionalTensors) {
  auto results = run_with_comm(
      ranks_on_nodes(3, 1), [&](const testing::RankContext& me, wholememory_comm_t comm) {
        size_t partition[] = {10, 0, 27};
        auto desc = matrix_desc(37, 3, 3, 0, WHOLEMEMORY_DT_HALF);
        wholememory_tensor_t tensor = nullptr;
        OPS_ASSERT_OK(wholememory_create_tensor(&tensor, &desc, comm, WHOLEMEMORY_MT_CHUNKED,
                                                WHOLEMEMORY_ML_DEVICE, partition));
        size_t offsets[4];
        OPS_ASSERT_OK(wholememory_tensor_get_entry_offsets(offsets, tensor));
        EXPECT_EQ((std::vector<size_t>{0, 10, 10, 37}), std::vector<size_t>(offsets, offsets + 4));
        wholememory_tensor_t local = nullptr;
        OPS_ASSERT_OK(wholememory_tensor_map_local_tensor(tensor, &local));
        EXPECT_EQ(static_cast<int64_t>(partition[me.rank]),
                  wholememory_tensor_get_tensor_description(local)->sizes[0]);
        OPS_EXPECT_OK(wholememory_destroy_tensor(local));
        OPS_EXPECT_OK(wholememory_destroy_tensor(tensor));

        auto array = array_desc(100, 0, WHOLEMEMORY_DT_INT64);
        OPS_ASSERT_OK(wholememory_create_tensor(&tensor, &array, comm, WHOLEMEMORY_MT_DISTRIBUTED,
                                                WHOLEMEMORY_ML_HOST));
        size_t sizes[3];
        OPS_ASSERT_OK(wholememory_tensor_get_entry_partition_sizes(sizes, tensor));
        EXPECT_EQ((std::vector<size_t>{34, 34, 32}), std::vector<size_t>(sizes, sizes + 3));
        EXPECT_EQ(800u, wholememory_get_total_size(wholememory_tensor_get_memory_handle(tensor)));
        OPS_EXPECT_OK(wholememory_destroy_tensor(tensor));
      });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(TensorApi, SubTensorsShareTheirRootsMemory) {
  auto results = run_with_comm(
      ranks_on_nodes(1, 1), [&](const testing::RankContext&, wholememory_comm_t comm) {
        auto desc = matrix_desc(40, 6, 8, 0, WHOLEMEMORY_DT_DOUBLE);
        wholememory_tensor_t root = nullptr, sub = nullptr, subsub = nullptr;
        OPS_ASSERT_OK(wholememory_create_tensor(&root, &desc, comm, WHOLEMEMORY_MT_CONTINUOUS,
                                                WHOLEMEMORY_ML_DEVICE));
        int64_t starts[] = {3, 1}, ends[] = {20, 4};
        OPS_ASSERT_OK(wholememory_tensor_get_subtensor(root, starts, ends, &sub));
        const auto* d = wholememory_tensor_get_tensor_description(sub);
        EXPECT_EQ(17, d->sizes[0]);
        EXPECT_EQ(3, d->sizes[1]);
        EXPECT_EQ(8, d->strides[0]);
        EXPECT_EQ(3 * 8 + 1, d->storage_offset);
        EXPECT_EQ(root, wholememory_tensor_get_root(sub));
        EXPECT_EQ(wholememory_tensor_get_memory_handle(root),
                  wholememory_tensor_get_memory_handle(sub));
        EXPECT_EQ(static_cast<char*>(wholememory_tensor_get_data_pointer(root)) + (3 * 8 + 1) * 8,
                  wholememory_tensor_get_data_pointer(sub));
        int64_t all[] = {-1, -1}, second[] = {2, 1}, end[] = {-1, 3};
        OPS_ASSERT_OK(wholememory_tensor_get_subtensor(sub, second, end, &subsub));
        EXPECT_EQ(15, wholememory_tensor_get_tensor_description(subsub)->sizes[0]);
        EXPECT_EQ(2, wholememory_tensor_get_tensor_description(subsub)->sizes[1]);
        EXPECT_EQ(5 * 8 + 2, wholememory_tensor_get_tensor_description(subsub)->storage_offset);
        EXPECT_EQ(root, wholememory_tensor_get_root(subsub));
        // A sub-tensor starting after entry 0 has no local tensor of its own.
        wholememory_tensor_t local = nullptr;
        EXPECT_EQ(WHOLEMEMORY_INVALID_VALUE, wholememory_tensor_map_local_tensor(sub, &local));
        wholememory_tensor_t bad = nullptr;
        int64_t empty_start[] = {5, 0}, empty_end[] = {5, 6};
        EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
                  wholememory_tensor_get_subtensor(root, empty_start, empty_end, &bad));
        int64_t past_end[] = {0, 7};
        EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
                  wholememory_tensor_get_subtensor(root, all, past_end, &bad));
        EXPECT_EQ(nullptr, bad);
        // Destroying a sub-tensor leaves the memory alone; destroying the root frees it.
        OPS_EXPECT_OK(wholememory_destroy_tensor(subsub));
        OPS_EXPECT_OK(wholememory_destroy_tensor(sub));
        EXPECT_GT(wholememory_get_total_size(wholememory_tensor_get_memory_handle(root)), 0u);
        OPS_EXPECT_OK(wholememory_destroy_tensor(root));
      });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(TensorApi, TensorsFromPointersAndHandles) {
  auto results = run_with_comm(
      ranks_on_nodes(2, 1), [&](const testing::RankContext&, wholememory_comm_t comm) {
        std::vector<float> storage(64);
        auto desc = array_desc(50, 10, WHOLEMEMORY_DT_FLOAT);
        wholememory_tensor_t tensor = nullptr;
        OPS_ASSERT_OK(wholememory_make_tensor_from_pointer(&tensor, storage.data(), &desc));
        EXPECT_FALSE(wholememory_tensor_has_handle(tensor));
        EXPECT_EQ(nullptr, wholememory_tensor_get_memory_handle(tensor));
        EXPECT_EQ(storage.data() + 10, wholememory_tensor_get_data_pointer(tensor));
        size_t offsets[2], count = 0, start = 9;
        OPS_ASSERT_OK(wholememory_tensor_get_entry_offsets(offsets, tensor));
        EXPECT_EQ(0u, offsets[0]);
        EXPECT_EQ(50u, offsets[1]);
        OPS_ASSERT_OK(wholememory_tensor_get_local_entry_count(&count, tensor));
        OPS_ASSERT_OK(wholememory_tensor_get_local_entry_start(&start, tensor));
        EXPECT_EQ(50u, count);
        EXPECT_EQ(0u, start);
        wholememory_gref_t gref{};
        OPS_ASSERT_OK(wholememory_tensor_get_global_reference(tensor, &gref));
        EXPECT_EQ(storage.data(), gref.pointer);
        wholememory_tensor_t local = nullptr;
        EXPECT_EQ(WHOLEMEMORY_INVALID_VALUE, wholememory_tensor_map_local_tensor(tensor, &local));
        OPS_EXPECT_OK(wholememory_destroy_tensor(tensor));

        wholememory_handle_t handle = nullptr;
        OPS_ASSERT_OK(wholememory_malloc(&handle, 30 * 16, comm, WHOLEMEMORY_MT_CHUNKED,
                                         WHOLEMEMORY_ML_HOST, 16));
        auto rows = matrix_desc(30, 3, 4, 0, WHOLEMEMORY_DT_INT);
        OPS_ASSERT_OK(wholememory_make_tensor_from_handle(&tensor, handle, &rows));
        EXPECT_EQ(handle, wholememory_tensor_get_memory_handle(tensor));
        OPS_EXPECT_OK(wholememory_destroy_tensor(tensor));
        EXPECT_EQ(30u * 16, wholememory_get_total_size(handle));  // still allocated
        // Entries that would straddle partitions, or a tensor larger than the allocation.
        auto straddling = matrix_desc(16, 3, 3, 0, WHOLEMEMORY_DT_INT);
        EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
                  wholememory_make_tensor_from_handle(&tensor, handle, &straddling));
        auto too_big = matrix_desc(31, 3, 4, 0, WHOLEMEMORY_DT_INT);
        EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
                  wholememory_make_tensor_from_handle(&tensor, handle, &too_big));
        OPS_EXPECT_OK(wholememory_free(handle));
      });
  EXPECT_ALL_RANKS_PASS(results);
}

// A row stride below the column count would make rows overlap (and let a gather or scatter reach
// past the storage the caller described); stride == columns is the packed layout.
TEST(TensorApi, RowStrideBelowTheColumnCountIsRefused) {
  run_in_one_rank([] {
    std::vector<float> storage(64);
    wholememory_tensor_t tensor = nullptr;
    auto overlapping = matrix_desc(8, 4, 3, 0, WHOLEMEMORY_DT_FLOAT);
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_make_tensor_from_pointer(&tensor, storage.data(), &overlapping));
    EXPECT_EQ(nullptr, tensor);
    auto negative = matrix_desc(8, 4, -4, 0, WHOLEMEMORY_DT_FLOAT);
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_make_tensor_from_pointer(&tensor, storage.data(), &negative));
    // Three dimensions: each stride must cover the whole of the dimension inside it.
    wholememory_tensor_description_t cube{};
    cube.dtype = WHOLEMEMORY_DT_FLOAT;
    cube.dim = 3;
    cube.sizes[0] = 2, cube.sizes[1] = 2, cube.sizes[2] = 4;
    cube.strides[0] = 7, cube.strides[1] = 4, cube.strides[2] = 1;
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_make_tensor_from_pointer(&tensor, storage.data(), &cube));
    cube.strides[0] = 8;
    OPS_ASSERT_OK(wholememory_make_tensor_from_pointer(&tensor, storage.data(), &cube));
    OPS_EXPECT_OK(wholememory_destroy_tensor(tensor));
    auto packed = matrix_desc(8, 4, 4, 0, WHOLEMEMORY_DT_FLOAT);
    OPS_ASSERT_OK(wholememory_make_tensor_from_pointer(&tensor, storage.data(), &packed));
    OPS_EXPECT_OK(wholememory_destroy_tensor(tensor));
    auto padded = matrix_desc(8, 4, 6, 0, WHOLEMEMORY_DT_FLOAT);
    OPS_ASSERT_OK(wholememory_make_tensor_from_pointer(&tensor, storage.data(), &padded));
    OPS_EXPECT_OK(wholememory_destroy_tensor(tensor));
    auto array = array_desc(64, 0, WHOLEMEMORY_DT_FLOAT);
    OPS_ASSERT_OK(wholememory_make_tensor_from_pointer(&tensor, storage.data(), &array));
    OPS_EXPECT_OK(wholememory_destroy_tensor(tensor));
  });
}

// pylibwholegraph passes absent operands as tensors of a null pointer with an initialised
// description (0-D, unknown dtype); upstream takes those, and operations refuse them.
TEST(TensorApi, PlaceholderTensorsWithoutStorageAreTaken) {
  run_in_one_rank([] {
    wholememory_tensor_description_t initialised;
    wholememory_initialize_tensor_desc(&initialised);
    wholememory_tensor_t none = nullptr;
    OPS_ASSERT_OK(wholememory_make_tensor_from_pointer(&none, nullptr, &initialised));
    EXPECT_EQ(nullptr, wholememory_tensor_get_data_pointer(none));
    EXPECT_EQ(0, wholememory_tensor_get_tensor_description(none)->dim);
    float storage[4];
    wholememory_tensor_t scalar = nullptr;
    OPS_ASSERT_OK(wholememory_make_tensor_from_pointer(&scalar, storage, &initialised));
    auto unknown = array_desc(4, 0, WHOLEMEMORY_DT_UNKNOWN);
    wholememory_tensor_t empty = nullptr;
    OPS_ASSERT_OK(wholememory_make_tensor_from_pointer(&empty, nullptr, &unknown));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_gather(none, empty, scalar, nullptr, nullptr, -1));
    OPS_EXPECT_OK(wholememory_destroy_tensor(none));
    OPS_EXPECT_OK(wholememory_destroy_tensor(scalar));
    OPS_EXPECT_OK(wholememory_destroy_tensor(empty));
  });
}

TEST(TensorApi, BadInputIsRefusedAndABadDescriptionFailsEveryRankPromptly) {
  auto results = run_with_comm(ranks_on_nodes(2, 1), [&](const testing::RankContext& me,
                                                         wholememory_comm_t comm) {
    auto good = matrix_desc(10, 4, 4, 0, WHOLEMEMORY_DT_FLOAT);
    wholememory_tensor_t tensor = nullptr;
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_create_tensor(nullptr, &good, comm, WHOLEMEMORY_MT_CONTINUOUS,
                                        WHOLEMEMORY_ML_HOST));
    // Rank 1 describes a 3-D tensor: both ranks fail, long before any collective deadline.
    auto bad = good;
    if (me.rank == 1) bad.dim = 3;
    const auto start = std::chrono::steady_clock::now();
    EXPECT_NE(WHOLEMEMORY_SUCCESS,
              wholememory_create_tensor(&tensor, &bad, comm, WHOLEMEMORY_MT_CONTINUOUS,
                                        WHOLEMEMORY_ML_HOST));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
    EXPECT_EQ(nullptr, tensor);
    auto offset = good;
    offset.storage_offset = 2;
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_create_tensor(&tensor, &offset, comm, WHOLEMEMORY_MT_CONTINUOUS,
                                        WHOLEMEMORY_ML_HOST));
    auto garbage = reinterpret_cast<wholememory_tensor_t>(0x1234);
    EXPECT_EQ(nullptr, wholememory_tensor_get_tensor_description(garbage));
    EXPECT_EQ(nullptr, wholememory_tensor_get_root(garbage));
    EXPECT_FALSE(wholememory_tensor_has_handle(garbage));
    EXPECT_EQ(nullptr, wholememory_tensor_get_data_pointer(garbage));
    size_t value = 0;
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_tensor_get_local_entry_count(&value, garbage));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT, wholememory_destroy_tensor(garbage));
    auto unknown = array_desc(4, 0, WHOLEMEMORY_DT_UNKNOWN);
    float storage[4];
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_make_tensor_from_pointer(&tensor, storage, &unknown));
    auto desc = array_desc(4, 0, WHOLEMEMORY_DT_FLOAT);
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_make_tensor_from_handle(&tensor, nullptr, &desc));
    EXPECT_EQ(WHOLEMEMORY_INVALID_INPUT,
              wholememory_make_tensor_from_pointer(&tensor, storage, nullptr));
  });
  EXPECT_ALL_RANKS_PASS(results);
}

}  // namespace
}  // namespace memloom::opstest
