// Bad input of every function of wholememory.h: before init, on a live communicator and live
// allocations, with wrong, freed and destroyed handles, and after finalize. WholeMemory reports the
// reason through its log; the table reads it from a log sink.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tests/bad_input/bad_input_table.h"
#include "wholememory/wholememory.h"

namespace memloom::bad_input {
namespace {

constexpr size_t kTotal = 1 << 20;

// A file of `bytes` bytes under $TMPDIR, removed with the object.
class TempFile {
 public:
  explicit TempFile(size_t bytes) {
    const char* dir = std::getenv("TMPDIR");
    path_ = std::string(dir != nullptr ? dir : "/tmp") + "/memloom-bad-input-XXXXXX";
    int fd = ::mkstemp(path_.data());
    EXPECT_GE(fd, 0);
    std::vector<char> zeros(bytes);
    EXPECT_EQ(::write(fd, zeros.data(), bytes), static_cast<ssize_t>(bytes));
    ::close(fd);
  }
  ~TempFile() { ::unlink(path_.c_str()); }
  const char* path() const { return path_.c_str(); }

 private:
  std::string path_;
};

TEST(BadInputTable, WholeMemory) {
  const MessageSource messages = wholememory_messages();
  wholememory_unique_id_t id{};
  wholememory_comm_t comm = nullptr;
  std::vector<Row> before_init = {
      {"wholememory_create_unique_id", "before init",
       [&] { return static_cast<int>(wholememory_create_unique_id(&id)); }, WHOLEMEMORY_LOGIC_ERROR,
       "wholememory_init has not been called"},
      {"wholememory_create_communicator", "before init",
       [&] { return static_cast<int>(wholememory_create_communicator(&comm, id, 0, 1)); },
       WHOLEMEMORY_LOGIC_ERROR, "wholememory_init has not been called"},
      {"wholememory_init", "flags 1",
       [] { return static_cast<int>(wholememory_init(1, LEVEL_ERROR)); }, WHOLEMEMORY_INVALID_VALUE,
       "flags are reserved and must be 0, got 1"},
      {"wholememory_init", "log level out of range",
       [] { return static_cast<int>(wholememory_init(0, static_cast<LogLevel>(42))); },
       WHOLEMEMORY_INVALID_INPUT, "42 is not a valid LogLevel"},
      {"wholememory_set_rmm_enabled", "RMM (not part of memloom)",
       [] { return static_cast<int>(wholememory_set_rmm_enabled(true)); },
       WHOLEMEMORY_NOT_SUPPORTED, "RMM allocations are not part of memloom"},
  };
  int count = run_rows(before_init, messages);

  ASSERT_EQ(wholememory_init(0, LEVEL_ERROR), WHOLEMEMORY_SUCCESS);
  const MessageSource live_messages = wholememory_messages();  // init may have set the level
  ASSERT_EQ(wholememory_create_unique_id(&id), WHOLEMEMORY_SUCCESS);
  ASSERT_EQ(wholememory_create_communicator(&comm, id, 0, 1), WHOLEMEMORY_SUCCESS);
  wholememory_comm_t destroyed_comm = nullptr, spare_comm = nullptr;
  ASSERT_EQ(wholememory_split_communicator(&destroyed_comm, comm, 0, 0), WHOLEMEMORY_SUCCESS);
  ASSERT_EQ(wholememory_destroy_communicator(destroyed_comm), WHOLEMEMORY_SUCCESS);
  wholememory_handle_t handle = nullptr, distributed = nullptr, freed = nullptr;
  ASSERT_EQ(
      wholememory_malloc(&handle, kTotal, comm, WHOLEMEMORY_MT_CONTINUOUS, WHOLEMEMORY_ML_HOST, 64),
      WHOLEMEMORY_SUCCESS);
  ASSERT_EQ(wholememory_malloc(&distributed, kTotal, comm, WHOLEMEMORY_MT_DISTRIBUTED,
                               WHOLEMEMORY_ML_HOST, 64),
            WHOLEMEMORY_SUCCESS);
  ASSERT_EQ(
      wholememory_malloc(&freed, kTotal, comm, WHOLEMEMORY_MT_CHUNKED, WHOLEMEMORY_ML_HOST, 64),
      WHOLEMEMORY_SUCCESS);
  ASSERT_EQ(wholememory_free(freed), WHOLEMEMORY_SUCCESS);
  auto fake_comm = reinterpret_cast<wholememory_comm_t>(0x40);
  auto fake_handle = reinterpret_cast<wholememory_handle_t>(0x40);
  wholememory_unique_id_t garbage_id;
  std::memset(garbage_id.internal, 0x5a, sizeof(garbage_id.internal));
  int value = 0;
  size_t size_value = 0;
  auto code = [](wholememory_error_code_t c) { return static_cast<int>(c); };
  auto malloc_with = [&](size_t total, int type, int location, size_t granularity,
                         size_t* partition = nullptr) {
    wholememory_handle_t out = nullptr;
    auto result = wholememory_malloc(
        &out, total, comm, static_cast<wholememory_memory_type_t>(type),
        static_cast<wholememory_memory_location_t>(location), granularity, partition);
    if (out != nullptr) wholememory_free(out);
    return static_cast<int>(result);
  };
  size_t short_plan[1] = {kTotal / 64 - 1};
  size_t long_plan[1] = {kTotal / 64 + 1};
  TempFile odd_file(100), good_file(kTotal);
  const char* odd_names[1] = {odd_file.path()};
  const char* missing_names[1] = {"/nonexistent/memloom-bad-input"};
  const char* null_names[1] = {nullptr};
  const char* good_names[1] = {good_file.path()};

  std::vector<Row> live = {
      {"wholememory_create_unique_id", "null output",
       [&] { return code(wholememory_create_unique_id(nullptr)); }, WHOLEMEMORY_INVALID_INPUT,
       "unique_id is null"},
      {"wholememory_create_communicator", "null output",
       [&] { return code(wholememory_create_communicator(nullptr, id, 0, 1)); },
       WHOLEMEMORY_INVALID_INPUT, "comm is null"},
      {"wholememory_create_communicator", "size 0",
       [&] { return code(wholememory_create_communicator(&spare_comm, id, 0, 0)); },
       WHOLEMEMORY_INVALID_INPUT, "communicator size must be positive, got 0"},
      {"wholememory_create_communicator", "rank out of range",
       [&] { return code(wholememory_create_communicator(&spare_comm, id, 1, 1)); },
       WHOLEMEMORY_INVALID_INPUT, "rank 1 is out of range [0, 1)"},
      {"wholememory_create_communicator", "negative rank",
       [&] { return code(wholememory_create_communicator(&spare_comm, id, -1, 1)); },
       WHOLEMEMORY_INVALID_INPUT, "rank -1 is out of range"},
      {"wholememory_create_communicator", "garbage unique id",
       [&] { return code(wholememory_create_communicator(&spare_comm, garbage_id, 0, 1)); },
       WHOLEMEMORY_INVALID_INPUT, "not a memloom WholeMemory unique id"},
      {"wholememory_split_communicator", "null output",
       [&] { return code(wholememory_split_communicator(nullptr, comm, 0, 0)); },
       WHOLEMEMORY_INVALID_INPUT, "new_comm is null"},
      {"wholememory_split_communicator", "wrong communicator",
       [&] { return code(wholememory_split_communicator(&spare_comm, fake_comm, 0, 0)); },
       WHOLEMEMORY_INVALID_INPUT, "is not a live communicator"},
      {"wholememory_destroy_communicator", "null communicator",
       [&] { return code(wholememory_destroy_communicator(nullptr)); }, WHOLEMEMORY_INVALID_INPUT,
       "the communicator is null"},
      {"wholememory_destroy_communicator", "destroyed communicator",
       [&] { return code(wholememory_destroy_communicator(destroyed_comm)); },
       WHOLEMEMORY_INVALID_INPUT, "is not a live communicator (destroyed, finalized or garbage)"},
      {"wholememory_destroy_communicator", "allocations alive",
       [&] { return code(wholememory_destroy_communicator(comm)); }, WHOLEMEMORY_INVALID_INPUT,
       "2 allocation(s) of this communicator are still alive"},
      {"wholememory_communicator_support_type_location", "wrong communicator",
       [&] {
         return code(wholememory_communicator_support_type_location(
             fake_comm, WHOLEMEMORY_MT_CONTINUOUS, WHOLEMEMORY_ML_HOST));
       },
       WHOLEMEMORY_INVALID_INPUT, "is not a live communicator"},
      {"wholememory_communicator_get_rank", "null output",
       [&] { return code(wholememory_communicator_get_rank(nullptr, comm)); },
       WHOLEMEMORY_INVALID_INPUT, "rank is null"},
      {"wholememory_communicator_get_rank", "wrong communicator",
       [&] { return code(wholememory_communicator_get_rank(&value, fake_comm)); },
       WHOLEMEMORY_INVALID_INPUT, "is not a live communicator"},
      {"wholememory_communicator_get_size", "null output",
       [&] { return code(wholememory_communicator_get_size(nullptr, comm)); },
       WHOLEMEMORY_INVALID_INPUT, "size is null"},
      {"wholememory_communicator_get_local_size", "null output",
       [&] { return code(wholememory_communicator_get_local_size(nullptr, comm)); },
       WHOLEMEMORY_INVALID_INPUT, "local_size is null"},
      {"wholememory_communicator_get_clique_info", "null output",
       [&] { return code(wholememory_communicator_get_clique_info(nullptr, comm)); },
       WHOLEMEMORY_INVALID_INPUT, "clique_info is null"},
      {"wholememory_communicator_is_bind_to_nvshmem", "wrong communicator",
       [&] { return failure_value(wholememory_communicator_is_bind_to_nvshmem(fake_comm), false); },
       kFailureValue, "is not a live communicator"},
      {"wholememory_communicator_set_distributed_backend", "NVSHMEM",
       [&] {
         return code(
             wholememory_communicator_set_distributed_backend(comm, WHOLEMEMORY_DB_NVSHMEM));
       },
       WHOLEMEMORY_NOT_SUPPORTED, "memloom is not built with NVSHMEM"},
      {"wholememory_communicator_set_distributed_backend", "value out of range",
       [&] {
         return code(wholememory_communicator_set_distributed_backend(
             comm, static_cast<wholememory_distributed_backend_t>(7)));
       },
       WHOLEMEMORY_INVALID_INPUT, "7 is not a valid wholememory_distributed_backend_t"},
      {"wholememory_communicator_get_distributed_backend", "wrong communicator",
       [&] {
         return failure_value(wholememory_communicator_get_distributed_backend(fake_comm),
                              WHOLEMEMORY_DB_NONE);
       },
       kFailureValue, "is not a live communicator"},
      {"wholememory_communicator_barrier", "destroyed communicator",
       [&] { return code(wholememory_communicator_barrier(destroyed_comm)); },
       WHOLEMEMORY_INVALID_INPUT, "is not a live communicator"},
      {"wholememory_is_intranode_communicator", "null communicator",
       [&] { return failure_value(wholememory_is_intranode_communicator(nullptr), false); },
       kFailureValue, "the communicator is null"},
      {"wholememory_is_intra_mnnvl_communicator", "wrong communicator",
       [&] { return failure_value(wholememory_is_intra_mnnvl_communicator(fake_comm), false); },
       kFailureValue, "is not a live communicator"},
      {"wholememory_malloc", "null output",
       [&] {
         return code(wholememory_malloc(nullptr, kTotal, comm, WHOLEMEMORY_MT_CONTINUOUS,
                                        WHOLEMEMORY_ML_HOST, 64));
       },
       WHOLEMEMORY_INVALID_INPUT, "wholememory_handle_ptr is null"},
      {"wholememory_malloc", "total_size 0", [&] { return malloc_with(0, 1, 2, 64); },
       WHOLEMEMORY_INVALID_VALUE, "total_size must be positive"},
      {"wholememory_malloc", "granularity 0", [&] { return malloc_with(kTotal, 1, 2, 0); },
       WHOLEMEMORY_INVALID_VALUE, "data granularity must be positive"},
      {"wholememory_malloc", "total_size not a multiple of the granularity",
       [&] { return malloc_with(1000, 1, 2, 64); }, WHOLEMEMORY_INVALID_VALUE, "total size 1000"},
      {"wholememory_malloc", "memory type NONE", [&] { return malloc_with(kTotal, 0, 2, 64); },
       WHOLEMEMORY_NOT_SUPPORTED, "is not supported on this communicator"},
      {"wholememory_malloc", "memory type out of range",
       [&] { return malloc_with(kTotal, 42, 2, 64); }, WHOLEMEMORY_INVALID_INPUT,
       "42 is not a valid wholememory_memory_type_t"},
      {"wholememory_malloc", "location NONE", [&] { return malloc_with(kTotal, 1, 0, 64); },
       WHOLEMEMORY_NOT_SUPPORTED, "at location 0 is not supported"},
      {"wholememory_malloc", "partition short of the total",
       [&] { return malloc_with(kTotal, 1, 2, 64, short_plan); }, WHOLEMEMORY_INVALID_VALUE,
       "rank_entry_partition adds up to"},
      {"wholememory_malloc", "partition beyond the total",
       [&] { return malloc_with(kTotal, 1, 2, 64, long_plan); }, WHOLEMEMORY_INVALID_VALUE,
       "rank_entry_partition"},
      {"wholememory_malloc", "larger than the host",
       [&] { return malloc_with(size_t{1} << 50, 1, 2, 64); }, WHOLEMEMORY_OUT_OF_MEMORY,
       "wholememory_malloc"},
      {"wholememory_malloc", "wrong communicator",
       [&] {
         wholememory_handle_t out = nullptr;
         return code(wholememory_malloc(&out, kTotal, fake_comm, WHOLEMEMORY_MT_CONTINUOUS,
                                        WHOLEMEMORY_ML_HOST, 64));
       },
       WHOLEMEMORY_INVALID_INPUT, "is not a live communicator"},
      {"wholememory_free", "null handle", [&] { return code(wholememory_free(nullptr)); },
       WHOLEMEMORY_INVALID_INPUT, "the WholeMemory handle is null"},
      {"wholememory_free", "wrong handle", [&] { return code(wholememory_free(fake_handle)); },
       WHOLEMEMORY_INVALID_INPUT, "is not a live allocation"},
      {"wholememory_free", "freed handle", [&] { return code(wholememory_free(freed)); },
       WHOLEMEMORY_INVALID_INPUT, "is not a live allocation (freed, finalized or garbage)"},
      {"wholememory_get_communicator", "null output",
       [&] { return code(wholememory_get_communicator(nullptr, handle)); },
       WHOLEMEMORY_INVALID_INPUT, "comm is null"},
      {"wholememory_get_local_communicator", "not HIERARCHY",
       [&] { return code(wholememory_get_local_communicator(&spare_comm, handle)); },
       WHOLEMEMORY_NOT_SUPPORTED, "only HIERARCHY memory has a local communicator"},
      {"wholememory_get_cross_communicator", "freed handle",
       [&] { return code(wholememory_get_cross_communicator(&spare_comm, freed)); },
       WHOLEMEMORY_INVALID_INPUT, "is not a live allocation"},
      {"wholememory_get_memory_type", "wrong handle",
       [&] { return failure_value(wholememory_get_memory_type(fake_handle), WHOLEMEMORY_MT_NONE); },
       kFailureValue, "is not a live allocation"},
      {"wholememory_get_memory_location", "freed handle",
       [&] { return failure_value(wholememory_get_memory_location(freed), WHOLEMEMORY_ML_NONE); },
       kFailureValue, "is not a live allocation"},
      {"wholememory_get_distributed_backend", "null handle",
       [&] {
         return failure_value(wholememory_get_distributed_backend(nullptr), WHOLEMEMORY_DB_NONE);
       },
       kFailureValue, "the WholeMemory handle is null"},
      {"wholememory_get_total_size", "wrong handle",
       [&] { return failure_value(wholememory_get_total_size(fake_handle), size_t{0}); },
       kFailureValue, "is not a live allocation"},
      {"wholememory_get_data_granularity", "freed handle",
       [&] { return failure_value(wholememory_get_data_granularity(freed), size_t{0}); },
       kFailureValue, "is not a live allocation"},
      {"wholememory_get_local_memory", "wrong handle",
       [&] { return code(wholememory_get_local_memory(nullptr, nullptr, nullptr, fake_handle)); },
       WHOLEMEMORY_INVALID_INPUT, "is not a live allocation"},
      {"wholememory_get_local_size", "null output",
       [&] { return code(wholememory_get_local_size(nullptr, handle)); }, WHOLEMEMORY_INVALID_INPUT,
       "local_size is null"},
      {"wholememory_get_local_offset", "null output",
       [&] { return code(wholememory_get_local_offset(nullptr, handle)); },
       WHOLEMEMORY_INVALID_INPUT, "local_offset is null"},
      {"wholememory_get_rank_memory", "rank out of range",
       [&] { return code(wholememory_get_rank_memory(nullptr, nullptr, nullptr, 1, handle)); },
       WHOLEMEMORY_INVALID_INPUT, "rank 1"},
      {"wholememory_get_rank_memory", "negative rank",
       [&] { return code(wholememory_get_rank_memory(nullptr, nullptr, nullptr, -1, handle)); },
       WHOLEMEMORY_INVALID_INPUT, "rank -1"},
      {"wholememory_equal_entry_partition_plan", "null output",
       [&] { return code(wholememory_equal_entry_partition_plan(nullptr, 100, 2)); },
       WHOLEMEMORY_INVALID_INPUT, "entry_per_rank is null"},
      {"wholememory_equal_entry_partition_plan", "world_size 0",
       [&] { return code(wholememory_equal_entry_partition_plan(&size_value, 100, 0)); },
       WHOLEMEMORY_INVALID_INPUT, "0"},
      {"wholememory_get_global_pointer", "null output",
       [&] { return code(wholememory_get_global_pointer(nullptr, handle)); },
       WHOLEMEMORY_INVALID_INPUT, "global_ptr is null"},
      {"wholememory_get_global_pointer", "DISTRIBUTED memory",
       [&] {
         void* pointer = nullptr;
         return code(wholememory_get_global_pointer(&pointer, distributed));
       },
       WHOLEMEMORY_INVALID_INPUT, "has no global pointer"},
      {"wholememory_get_global_reference", "DISTRIBUTED memory",
       [&] {
         wholememory_gref_t gref{};
         return code(wholememory_get_global_reference(&gref, distributed));
       },
       WHOLEMEMORY_INVALID_INPUT, "has no global reference"},
      {"wholememory_get_rank_partition_sizes", "null output",
       [&] { return code(wholememory_get_rank_partition_sizes(nullptr, handle)); },
       WHOLEMEMORY_INVALID_INPUT, "rank_mem_sizes is null"},
      {"wholememory_get_rank_partition_offsets", "null output",
       [&] { return code(wholememory_get_rank_partition_offsets(nullptr, handle)); },
       WHOLEMEMORY_INVALID_INPUT, "rank_mem_offsets is null"},
      {"wholememory_load_from_file", "file_count 0",
       [&] { return code(wholememory_load_from_file(handle, 0, 64, 64, good_names, 0, 0)); },
       WHOLEMEMORY_INVALID_INPUT, "file_count"},
      {"wholememory_load_from_file", "null file names",
       [&] { return code(wholememory_load_from_file(handle, 0, 64, 64, nullptr, 1, 0)); },
       WHOLEMEMORY_INVALID_INPUT, "file_names is null"},
      {"wholememory_load_from_file", "null file name",
       [&] { return code(wholememory_load_from_file(handle, 0, 64, 64, null_names, 1, 0)); },
       WHOLEMEMORY_INVALID_INPUT, "file_names[0] is null"},
      {"wholememory_load_from_file", "missing file",
       [&] { return code(wholememory_load_from_file(handle, 0, 64, 64, missing_names, 1, 0)); },
       WHOLEMEMORY_INVALID_INPUT, "/nonexistent/memloom-bad-input"},
      {"wholememory_load_from_file", "file size not a multiple of the entry",
       [&] { return code(wholememory_load_from_file(handle, 0, 64, 64, odd_names, 1, 0)); },
       WHOLEMEMORY_INVALID_VALUE, "has 100 bytes"},
      {"wholememory_load_from_file", "entry size 0",
       [&] { return code(wholememory_load_from_file(handle, 0, 0, 0, good_names, 1, 0)); },
       WHOLEMEMORY_INVALID_VALUE, "entry sizes must be positive"},
      {"wholememory_load_from_file", "wrong handle",
       [&] { return code(wholememory_load_from_file(fake_handle, 0, 64, 64, good_names, 1, 0)); },
       WHOLEMEMORY_INVALID_INPUT, "is not a live allocation"},
      {"wholememory_store_to_file", "null file name",
       [&] { return code(wholememory_store_to_file(handle, 0, 64, 64, nullptr)); },
       WHOLEMEMORY_INVALID_INPUT, "local_file_name is null"},
      {"wholememory_store_to_file", "unwritable path",
       [&] { return code(wholememory_store_to_file(handle, 0, 64, 64, "/nonexistent/dir/x")); },
       WHOLEMEMORY_SYSTEM_ERROR, "/nonexistent/dir/x"},
  };
  count += run_rows(live, live_messages);

  // Nothing was corrupted: the communicator and the allocation still work, loading included.
  EXPECT_EQ(wholememory_communicator_barrier(comm), WHOLEMEMORY_SUCCESS);
  EXPECT_EQ(wholememory_load_from_file(handle, 0, 64, 64, good_names, 1, 0), WHOLEMEMORY_SUCCESS);
  EXPECT_EQ(wholememory_get_total_size(handle), kTotal);
  EXPECT_EQ(wholememory_free(distributed), WHOLEMEMORY_SUCCESS);
  EXPECT_EQ(wholememory_free(handle), WHOLEMEMORY_SUCCESS);
  EXPECT_EQ(wholememory_finalize(), WHOLEMEMORY_SUCCESS);

  std::vector<Row> after_finalize = {
      {"wholememory_communicator_barrier", "after finalize",
       [&] { return code(wholememory_communicator_barrier(comm)); }, WHOLEMEMORY_INVALID_INPUT,
       "is not a live communicator (destroyed, finalized or garbage)"},
      {"wholememory_get_total_size", "after finalize",
       [&] { return failure_value(wholememory_get_total_size(handle), size_t{0}); }, kFailureValue,
       "is not a live allocation"},
  };
  count += run_rows(after_finalize, live_messages);
  std::printf("[bad input] WholeMemory: %d rows\n", count);
}

}  // namespace
}  // namespace memloom::bad_input
