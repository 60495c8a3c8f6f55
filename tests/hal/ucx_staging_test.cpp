// The UCX transport's staging of memory the CPU cannot touch (the CUDA backend's device memory
// where UCX has no CUDA support), checked without a GPU (protected_memory_staging.h: "device
// memory" that only the staging's copies open). Had the transport handed such memory to UCX or
// touched it itself, UCX would fail on it or the process fault, so every test here fails unless
// all of it went through the staging's copies. Like TcpStaging, not named *Transport*: it builds
// its transports itself, so the ucx.* runs leave it out.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hw/host/buffer_staging.h"
#include "hw/host/ucx_transport.h"
#include "memloom/error.h"
#include "tests/hal/protected_memory_staging.h"
#include "tests/hal/staged_transport_test.h"
#include "tests/support/scoped_env.h"
#include "tests/support/status_of.h"

namespace memloom {
namespace {

using Op = hal::TransferOp;
using Direction = hal::TransferOp::Direction;
using ::memloom::testing::status_of;
using test::ProtectedMemoryStaging;
using test::random_bytes;

// The am path's message payload, and so the largest piece either side stages.
constexpr size_t kChunk = host::UcxAmRequests::kChunkBytes;

Deadline soon() {
  return Deadline::after(std::chrono::seconds(30));
}

class UcxStaging : public test::StagedTransportTest {
 protected:
  void SetUp() override {
    options.job_secret.fill(7);
    start(options);
  }

  hal::TransportOptions options;
};

TEST_F(UcxStaging, DeviceMemoryOnBothSidesIsByteExactUpTo64MiB) {
  ASSERT_NO_FATAL_FAILURE(check_device_round_trips());
  // Staged a message at a time through pooled buffers, never the whole op in one host buffer.
  EXPECT_LE(local_device->largest_copy(), kChunk);
  EXPECT_LE(remote_device->largest_copy(), kChunk);
  EXPECT_LE(local_device->host_bytes(), 16 * kChunk);
  EXPECT_LE(remote_device->host_bytes(), 16 * kChunk);
}

// On CUDA a page-locked allocation or free waits for the device, and BM runs transfers inside
// stream host functions: the staging's buffers are all allocated when the transport is made, and
// traffic (here 64 MiB ops, messages in flight on both sides, a host-to-device op staged by the
// owner alone) allocates and frees none of them.
TEST_F(UcxStaging, StagingMemoryIsAllocatedUpFrontAndNeverOnTheDataPath) {
  const size_t requester_bytes = local_device->host_bytes();
  const size_t server_bytes = remote_device->host_bytes();
  EXPECT_GT(requester_bytes, 0u);
  EXPECT_GT(server_bytes, 0u);
  ASSERT_NO_FATAL_FAILURE(check_device_round_trips());
  std::vector<std::byte> host(kBytes, std::byte{5});
  requester->transfer(
      server->address(),
      {Op{Direction::kWrite, remote_device->device_address(0), host.data(), kBytes}}, soon());
  EXPECT_EQ(remote_device->peek(kBytes - 8, 8), std::vector<std::byte>(8, std::byte{5}));
  EXPECT_EQ(local_device->host_bytes(), requester_bytes);
  EXPECT_EQ(remote_device->host_bytes(), server_bytes);
  EXPECT_EQ(local_device->host_frees(), 0u);
  EXPECT_EQ(remote_device->host_frees(), 0u);
}

TEST_F(UcxStaging, HostAndDeviceMemoryMixInOneOrderedBatch) {
  check_mixed_ordered_batch();
}

TEST_F(UcxStaging, ADeviceReadThenAWriteFromTheSameBufferStayInOrder) {
  // The write sends what the read brought: staging its bytes before the read landed would send
  // the buffer's old contents.
  auto data = random_bytes(8192, 5);
  remote_device->fill(0, data);
  local_device->fill(0, std::vector<std::byte>(8192, std::byte{0}));
  requester->transfer(
      server->address(),
      {Op{Direction::kRead, remote_device->device_address(0), local_device->device(), 8192},
       Op{Direction::kWrite, reinterpret_cast<uint64_t>(remote_host.data()), local_device->device(),
          8192}},
      soon());
  EXPECT_EQ(std::memcmp(remote_host.data(), data.data(), data.size()), 0);
}

TEST_F(UcxStaging, SmallDeviceOpsShareAWaitPerMessage) {
  // 1000 writes of 64 B to distinct slots, then 1000 reads of them, in one call: the requester
  // waits once per message it stages (and once for all the reads' copies back), not once per op.
  constexpr size_t kOps = 1000, kSlot = 64;
  auto source = random_bytes(kOps * kSlot, 21);
  local_device->fill(0, source);
  const size_t read_base = kOps * kSlot;
  std::vector<Op> ops;
  for (size_t i = 0; i < kOps; ++i) {
    ops.push_back(Op{Direction::kWrite, remote_device->device_address(i * kSlot),
                     local_device->device() + i * kSlot, kSlot});
  }
  for (size_t i = 0; i < kOps; ++i) {
    ops.push_back(Op{Direction::kRead, remote_device->device_address(i * kSlot),
                     local_device->device() + read_base + i * kSlot, kSlot});
  }
  const size_t requester_waits = local_device->waits(), server_waits = remote_device->waits();
  requester->transfer(server->address(), ops, soon());
  EXPECT_LE(local_device->waits() - requester_waits, 8u);
  EXPECT_LE(remote_device->waits() - server_waits, 8u);
  EXPECT_EQ(local_device->peek(read_base, kOps * kSlot), source);
}

// An op larger than a message's payload is cut into messages by a requester with staging; one
// from a requester without staging (host memory only) comes whole, and the owner stages it in a
// buffer of its own.
TEST_F(UcxStaging, AnOpLargerThanTheStagingChunkReachesDeviceMemory) {
  constexpr size_t kLarge = 5 * kChunk + 3;
  const auto data = random_bytes(kLarge, 33);
  std::vector<std::byte> back(kLarge);
  const uint64_t remote = remote_device->device_address(4096);
  requester->transfer(server->address(),
                      {Op{Direction::kWrite, remote, const_cast<std::byte*>(data.data()), kLarge}},
                      soon());
  EXPECT_EQ(remote_device->peek(4096, kLarge), data);
  requester->transfer(server->address(), {Op{Direction::kRead, remote, back.data(), kLarge}},
                      soon());
  EXPECT_EQ(back, data);
  EXPECT_LE(remote_device->largest_copy(), kChunk);

  host::UcxTransport plain(options);  // no staging: every local buffer is host memory
  const auto more = random_bytes(kLarge, 34);
  plain.transfer(server->address(),
                 {Op{Direction::kWrite, remote, const_cast<std::byte*>(more.data()), kLarge}},
                 soon());
  EXPECT_EQ(remote_device->peek(4096, kLarge), more);
  plain.transfer(server->address(), {Op{Direction::kRead, remote, back.data(), kLarge}}, soon());
  EXPECT_EQ(back, more);
}

TEST_F(UcxStaging, RefusedRequestsLeaveDeviceMemoryAloneAndThePeerUsable) {
  const auto remote_before = remote_device->peek(0, 8192);
  auto data = random_bytes(8192, 4);
  local_device->fill(0, data);
  const uint64_t outside = 16;
  // Two writes of one message (apart in both memories, so nothing orders them into two), the
  // second outside every exposed range: the message is refused as a whole.
  EXPECT_EQ(
      status_of([&] {
        requester->transfer(
            server->address(),
            {Op{Direction::kWrite, remote_device->device_address(0), local_device->device(), 8192},
             Op{Direction::kWrite, outside, local_device->device() + 8192, 16}},
            soon());
      }),
      Status::kInvalidInput);
  EXPECT_EQ(remote_device->peek(0, 8192), remote_before);
  // A refused read leaves the local device memory it was to land in alone.
  EXPECT_EQ(status_of([&] {
              requester->transfer(server->address(),
                                  {Op{Direction::kRead, outside, local_device->device(), 16}},
                                  soon());
            }),
            Status::kInvalidInput);
  EXPECT_EQ(local_device->peek(0, 8192), data);
  requester->transfer(
      server->address(),
      {Op{Direction::kWrite, remote_device->device_address(0), local_device->device(), 8192}},
      soon());
  EXPECT_EQ(remote_device->peek(0, 8192), data);
}

// On the rma path: the owner serves remote keys for its host memory but refuses them for device
// memory it stages (kNotSupported), and the requester moves to am for it; a requester's own
// device memory goes on am whatever the data path.
TEST(UcxStagingRma, DeviceMemoryMovesOnAmWhereTheDataPathIsRma) {
  test::ScopedEnv path("MEMLOOM_UCX_DATA_PATH", std::string("rma"));
  hal::TransportOptions options;
  options.job_secret.fill(8);
  constexpr size_t kBytes = 4 * kChunk;
  auto server_staging = std::make_unique<ProtectedMemoryStaging>(kBytes);
  auto requester_staging = std::make_unique<ProtectedMemoryStaging>(kBytes);
  ProtectedMemoryStaging* remote_device = server_staging.get();
  ProtectedMemoryStaging* local_device = requester_staging.get();
  std::optional<host::UcxTransport> server, requester;
  server.emplace(options, std::move(server_staging));
  requester.emplace(options, std::move(requester_staging));
  server->expose(remote_device->device(), kBytes);
  std::vector<std::byte> remote_host(kBytes);
  server->expose(remote_host.data(), remote_host.size());
  const auto host_remote = reinterpret_cast<uint64_t>(remote_host.data());

  // Host to host on rma, then device on this side to host there (am: local staging).
  auto data = random_bytes(kBytes, 41);
  std::vector<std::byte> back(kBytes);
  requester->transfer(server->address(), {Op{Direction::kWrite, host_remote, data.data(), kBytes}},
                      soon());
  EXPECT_EQ(remote_host, data);
  local_device->fill(0, data);
  std::memset(remote_host.data(), 0, kBytes);
  requester->transfer(server->address(),
                      {Op{Direction::kWrite, host_remote, local_device->device(), kBytes}}, soon());
  EXPECT_EQ(remote_host, data);
  // Host here to device there: its key is refused, and the call moves to am.
  const auto more = random_bytes(kBytes, 42);
  requester->transfer(server->address(),
                      {Op{Direction::kWrite, remote_device->device_address(0),
                          const_cast<std::byte*>(more.data()), kBytes},
                       Op{Direction::kRead, remote_device->device_address(0), back.data(), kBytes}},
                      soon());
  EXPECT_EQ(remote_device->peek(0, kBytes), more);
  EXPECT_EQ(back, more);
  requester.reset();
  server.reset();
}

}  // namespace
}  // namespace memloom
