// Shared helpers of the WholeMemory tests: ranks with a world communicator, copies that work on
// device memory too, byte patterns, and temporary directories.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tests/support/multi_process.h"
#include "wholememory/wholememory.h"

// Defined in c_header_check.c: calls with enum arguments outside their enums, made from C.
extern "C" {
int wm_c_init_with_log_level(int level);
int wm_c_support_type_location(wholememory_comm_t comm, int type, int location);
int wm_c_set_distributed_backend(wholememory_comm_t comm, int backend);
int wm_c_malloc(wholememory_handle_t* handle, size_t total_size, wholememory_comm_t comm, int type,
                int location, size_t granularity);
}

namespace memloom::wmtest {

using RankBody = std::function<void(const testing::RankContext&, wholememory_comm_t)>;

// Runs body on every rank with the library initialised and a communicator over all ranks, created
// from a unique id that rank 0 makes and hands to the others through a pipe (as an MPI program
// would by broadcast). Finalizes afterwards.
std::vector<testing::RankResult> run_with_comm(const testing::MultiProcessOptions& options,
                                               const RankBody& body);

testing::MultiProcessOptions ranks_on_nodes(int ranks, int nodes);

// Copies between WholeMemory (possibly device memory) and host buffers through a backend stream.
void write_memory(void* dst, const void* src, size_t bytes);
void read_memory(void* dst, const void* src, size_t bytes);

// The expected byte at logical offset `offset` of a table filled with `seed`.
inline uint8_t pattern_byte(size_t offset, uint8_t seed) {
  return static_cast<uint8_t>((offset ^ (offset >> 8) ^ (offset >> 16)) * 31u + seed);
}
std::vector<uint8_t> pattern(size_t offset, size_t bytes, uint8_t seed);

// Fills my partition with the pattern of its logical offsets.
void fill_local_partition(wholememory_handle_t handle, uint8_t seed);
// Checks `bytes` at `pointer` against the pattern from `offset`; returns the first mismatch's
// position or -1.
long long first_mismatch(const void* pointer, size_t offset, size_t bytes, uint8_t seed);

// A directory under $TMPDIR removed with everything in it when the object goes.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

void write_file(const std::string& path, const std::vector<uint8_t>& bytes);
std::vector<uint8_t> read_file(const std::string& path);

}  // namespace memloom::wmtest

#define WM_ASSERT_OK(expr) ASSERT_EQ(WHOLEMEMORY_SUCCESS, (expr)) << #expr
#define WM_EXPECT_OK(expr) EXPECT_EQ(WHOLEMEMORY_SUCCESS, (expr)) << #expr
