// Helpers shared by the SHM and BM tests: short timeouts, result checks that print
// smem_get_last_err_msg(), and device-memory access that works on every backend.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "hw/hal/stream.h"
#include "smem/host/smem.h"
#include "src/core/platform_loader.h"
#include "src/store/client.h"
#include "tests/support/multi_process.h"

#define ASSERT_SMEM_OK(expr)                                                       \
  do {                                                                             \
    int32_t smem_rc_ = (expr);                                                     \
    ASSERT_EQ(smem_rc_, SMEM_SUCCESS) << #expr << ": " << smem_get_last_err_msg(); \
  } while (0)

#define EXPECT_SMEM_OK(expr)                                                       \
  do {                                                                             \
    int32_t smem_rc_ = (expr);                                                     \
    EXPECT_EQ(smem_rc_, SMEM_SUCCESS) << #expr << ": " << smem_get_last_err_msg(); \
  } while (0)

// Expects `expr` to fail with `code` and a last error message containing `text`.
#define EXPECT_SMEM_FAILS(expr, code, text)                                                   \
  do {                                                                                        \
    int32_t smem_rc_ = (expr);                                                                \
    EXPECT_EQ(smem_rc_, (code)) << #expr;                                                     \
    EXPECT_NE(std::string(smem_get_last_err_msg()).find(text), std::string::npos)             \
        << #expr << ": message '" << smem_get_last_err_msg() << "' lacks '" << (text) << "'"; \
  } while (0)

namespace memloom::testing {

inline constexpr uint64_t kMiB = 1ull << 20;

inline bool last_error_contains(const std::string& text) {
  return std::string(smem_get_last_err_msg()).find(text) != std::string::npos;
}

// Reads and writes memory the backend may keep on a device (symmetric slots, contexts) through a
// stream, so the tests do not depend on device memory being host-addressable.
class DeviceIo {
 public:
  explicit DeviceIo(int device) : stream_(core::platform().create_stream(device)) {}
  void write(void* device_dst, const void* host_src, size_t bytes) {
    stream_->copy(device_dst, host_src, bytes);
    stream_->synchronize(Deadline::after(std::chrono::seconds(10)));
  }
  void read(void* host_dst, const void* device_src, size_t bytes) {
    stream_->copy(host_dst, device_src, bytes);
    stream_->synchronize(Deadline::after(std::chrono::seconds(10)));
  }
  template <typename T>
  T read_value(const void* device_src) {
    T value{};
    read(&value, device_src, sizeof(T));
    return value;
  }
  template <typename T>
  void write_value(void* device_dst, T value) {
    write(device_dst, &value, sizeof(T));
  }

 private:
  std::unique_ptr<hal::Stream> stream_;
};

// A TCP port that was free a moment ago (for tests where a rank starts the config store).
inline int free_tcp_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error("no free TCP port");
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

// A barrier over the job's config store, for APIs without one (BM): the n-th call of every rank
// returns once all `world` ranks made it.
class StoreBarrier {
 public:
  StoreBarrier(const RankContext& ctx)
      : client_(store::Client::connect(ctx.store_url)),
        prefix_("test-barrier/" + ctx.job_id + "/"),
        world_(ctx.world_size) {}
  void wait(std::chrono::milliseconds timeout = std::chrono::milliseconds(20000)) {
    const std::string key = prefix_ + std::to_string(round_++);
    client_->add(key, 1);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::stoll(client_->get(key, std::chrono::milliseconds(0)).value_or("0")) < world_) {
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("test barrier timed out");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  store::Client& client() { return *client_; }

 private:
  std::unique_ptr<store::Client> client_;
  std::string prefix_;
  int world_;
  int round_ = 0;
};

// Options for run_ranks with a timeout that bounds every test well below the ctest timeout.
inline MultiProcessOptions ranks_on_nodes(int ranks, int nodes = 1) {
  MultiProcessOptions options;
  options.ranks = ranks;
  options.nodes = nodes;
  options.timeout = std::chrono::milliseconds(60000);
  return options;
}

// A pattern byte that tells ranks, offsets and rounds apart.
inline uint8_t pattern(int rank, size_t offset, int round = 0) {
  return static_cast<uint8_t>(rank * 31 + static_cast<int>(offset % 251) + round * 7 + 1);
}

inline std::vector<uint8_t> pattern_buffer(int rank, size_t bytes, int round = 0) {
  std::vector<uint8_t> buffer(bytes);
  for (size_t i = 0; i < bytes; ++i) buffer[i] = pattern(rank, i, round);
  return buffer;
}

}  // namespace memloom::testing
