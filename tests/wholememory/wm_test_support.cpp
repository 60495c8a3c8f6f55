#include "tests/wholememory/wm_test_support.h"

#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "src/core/platform_loader.h"
#include "src/wholememory/blocking_copy.h"

namespace memloom::wmtest {
namespace {

void read_exactly(int fd, void* out, size_t bytes, int timeout_ms) {
  auto* cursor = static_cast<char*>(out);
  while (bytes > 0) {
    pollfd entry{fd, POLLIN, 0};
    if (::poll(&entry, 1, timeout_ms) <= 0)
      throw std::runtime_error("timed out waiting for the unique id");
    const ssize_t got = ::read(fd, cursor, bytes);
    if (got <= 0) throw std::runtime_error("the unique id pipe closed");
    cursor += got;
    bytes -= static_cast<size_t>(got);
  }
}

}  // namespace

testing::MultiProcessOptions ranks_on_nodes(int ranks, int nodes) {
  testing::MultiProcessOptions options;
  options.ranks = ranks;
  options.nodes = nodes;
  options.timeout = std::chrono::milliseconds(60000);
  options.env["MEMLOOM_EMU_DEVICE_MEM"] = "256M";
  return options;
}

std::vector<testing::RankResult> run_with_comm(const testing::MultiProcessOptions& options,
                                               const RankBody& body) {
  int id_pipe[2];
  if (::pipe(id_pipe) != 0) throw std::runtime_error("pipe failed");
  auto results = testing::run_ranks(options, [&](const testing::RankContext& context) {
    ASSERT_EQ(WHOLEMEMORY_SUCCESS, wholememory_init(0, LEVEL_WARN));
    wholememory_unique_id_t id{};
    if (context.rank == 0) {
      ASSERT_EQ(WHOLEMEMORY_SUCCESS, wholememory_create_unique_id(&id));
      // Writes of this size are atomic on a pipe, so every reader gets one whole id.
      for (int r = 1; r < context.world_size; ++r) {
        ASSERT_EQ(static_cast<ssize_t>(sizeof(id)), ::write(id_pipe[1], &id, sizeof(id)));
      }
    } else {
      read_exactly(id_pipe[0], &id, sizeof(id), 30000);
    }
    wholememory_comm_t comm = nullptr;
    ASSERT_EQ(WHOLEMEMORY_SUCCESS,
              wholememory_create_communicator(&comm, id, context.rank, context.world_size));
    body(context, comm);
    EXPECT_EQ(WHOLEMEMORY_SUCCESS, wholememory_finalize());
  });
  ::close(id_pipe[0]);
  ::close(id_pipe[1]);
  return results;
}

void write_memory(void* dst, const void* src, size_t bytes) {
  wholememory::BlockingCopier(core::platform().current_device()).copy(dst, src, bytes);
}

void read_memory(void* dst, const void* src, size_t bytes) {
  wholememory::BlockingCopier(core::platform().current_device()).copy(dst, src, bytes);
}

std::vector<uint8_t> pattern(size_t offset, size_t bytes, uint8_t seed) {
  std::vector<uint8_t> out(bytes);
  for (size_t i = 0; i < bytes; ++i) out[i] = pattern_byte(offset + i, seed);
  return out;
}

void fill_local_partition(wholememory_handle_t handle, uint8_t seed) {
  void* local = nullptr;
  size_t size = 0, offset = 0;
  ASSERT_EQ(WHOLEMEMORY_SUCCESS, wholememory_get_local_memory(&local, &size, &offset, handle));
  if (size == 0) return;
  const auto bytes = pattern(offset, size, seed);
  write_memory(local, bytes.data(), size);
}

long long first_mismatch(const void* pointer, size_t offset, size_t bytes, uint8_t seed) {
  std::vector<uint8_t> seen(bytes);
  if (bytes > 0) read_memory(seen.data(), pointer, bytes);
  for (size_t i = 0; i < bytes; ++i) {
    if (seen[i] != pattern_byte(offset + i, seed)) return static_cast<long long>(i);
  }
  return -1;
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base != nullptr && *base ? base : "/tmp") + "/memloom-wm-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace memloom::wmtest
