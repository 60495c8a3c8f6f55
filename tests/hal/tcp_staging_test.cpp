// The host TCP transport's staging of memory the CPU cannot touch (the CUDA backend's device
// memory), checked without a GPU (protected_memory_staging.h: "device memory" that only the
// staging's copies open). If the transport handed such memory to the socket or touched it itself,
// the socket call would fail with EFAULT (or the process fault), so every test here fails unless
// all of it went through copy(). The suite is not named *Transport* on purpose: it builds the TCP
// transport itself, so the ucx.* runs leave it out.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cstring>
#include <vector>

#include "hw/host/buffer_staging.h"
#include "hw/host/tcp_transport.h"
#include "hw/host/tcp_wire.h"
#include "memloom/error.h"
#include "src/base/unique_fd.h"
#include "tests/hal/protected_memory_staging.h"
#include "tests/hal/staged_transport_test.h"
#include "tests/support/status_of.h"

namespace memloom {
namespace {

using Op = hal::TransferOp;
using Direction = hal::TransferOp::Direction;
using ::memloom::testing::status_of;
using test::ProtectedMemoryStaging;
using test::random_bytes;

class TcpStaging : public test::StagedTransportTest<host::TcpTransport> {
 protected:
  void SetUp() override { start(hal::TransportOptions{}); }
};

TEST_F(TcpStaging, DeviceMemoryOnBothSidesIsByteExactUpTo64MiB) {
  ASSERT_NO_FATAL_FAILURE(check_device_round_trips());
  // Staged a piece at a time, never the whole transfer in one bounce buffer.
  EXPECT_LE(local_device->largest_copy(), size_t{2} << 20);
  EXPECT_LE(remote_device->largest_copy(), size_t{2} << 20);
  EXPECT_LE(local_device->host_bytes(), size_t{8} << 20);
  EXPECT_LE(remote_device->host_bytes(), size_t{2} << 20);
}

TEST_F(TcpStaging, HostAndDeviceMemoryMixInOneOrderedBatch) {
  check_mixed_ordered_batch();
}

TEST_F(TcpStaging, SmallDeviceOpsOfABatchShareOneWaitPerSideAndStayInOrder) {
  // 1000 writes of 64 B into 100 remote slots (each slot written 10 times: the last one counts),
  // then reads of the 100 slots, in one call: one batch, so each side waits once for its writes
  // and once for its reads.
  constexpr size_t kWrites = 1000, kSlots = 100, kSlot = 64;
  auto source = random_bytes(kWrites * kSlot, 21);
  local_device->fill(0, source);
  const size_t read_base = kWrites * kSlot;
  std::vector<Op> ops;
  for (size_t i = 0; i < kWrites; ++i) {
    ops.push_back(Op{Direction::kWrite, remote_device->device_address((i % kSlots) * kSlot),
                     local_device->device() + i * kSlot, kSlot});
  }
  for (size_t k = 0; k < kSlots; ++k) {
    ops.push_back(Op{Direction::kRead, remote_device->device_address(k * kSlot),
                     local_device->device() + read_base + k * kSlot, kSlot});
  }
  const size_t requester_waits = local_device->waits(), server_waits = remote_device->waits();
  requester->transfer(server->address(), ops, soon());
  EXPECT_EQ(local_device->waits() - requester_waits, 2u);
  EXPECT_EQ(remote_device->waits() - server_waits, 2u);
  auto back = local_device->peek(read_base, kSlots * kSlot);
  for (size_t k = 0; k < kSlots; ++k) {
    const size_t last = kWrites - kSlots + k;  // the last write of slot k
    ASSERT_EQ(std::memcmp(back.data() + k * kSlot, source.data() + last * kSlot, kSlot), 0)
        << "slot " << k;
  }
}

// memloom's own requester cuts ops into pieces of 2 MiB, but the wire allows an op of up to 64 MiB;
// the server stages such an op a buffer at a time. Spoken here by hand, over a blocking socket.
TEST_F(TcpStaging, AnOpLargerThanTheServersStagingBufferIsMovedInPieces) {
  constexpr size_t kLarge = (5u << 20) + 3;
  const auto data = random_bytes(kLarge, 33);
  host::wire::Endpoint endpoint = host::wire::parse_tcp_url(server->address());
  const base::UniqueFd socket(::socket(endpoint.address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const int fd = socket.get();
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&endpoint.address), endpoint.length), 0);
  // The server's options left the job secret all zero: the test proves that one.
  host::wire::prove_membership(fd, server->address(), hal::JobSecret{}, soon());
  auto run = [&](uint32_t kind, uint64_t batch_id, void* payload) {
    const bool write = kind == host::wire::kOpWrite;
    host::wire::RequestHeader request{host::wire::kRequestMagic, 1, batch_id, write ? kLarge : 0,
                                      write ? 0 : kLarge};
    host::wire::OpDescriptor op{remote_device->device_address(4096), kLarge, kind, 0};
    ASSERT_TRUE(host::wire::write_exact(fd, &request, sizeof(request), soon()));
    ASSERT_TRUE(host::wire::write_exact(fd, &op, sizeof(op), soon()));
    if (write) {
      ASSERT_TRUE(host::wire::write_exact(fd, payload, kLarge, soon()));
    }
    host::wire::ResponseHeader response{};
    ASSERT_TRUE(host::wire::read_exact(fd, &response, sizeof(response), soon()));
    ASSERT_EQ(response.status, 0u);
    ASSERT_EQ(response.batch_id, batch_id);
    if (!write) {
      ASSERT_TRUE(host::wire::read_exact(fd, payload, kLarge, soon()));
    }
    host::wire::ResponseTrailer trailer{};
    ASSERT_TRUE(host::wire::read_exact(fd, &trailer, sizeof(trailer), soon()));
    ASSERT_EQ(trailer.batch_id, batch_id);
  };
  run(host::wire::kOpWrite, 1, const_cast<std::byte*>(data.data()));
  EXPECT_EQ(remote_device->peek(4096, kLarge), data);
  std::vector<std::byte> back(kLarge);
  run(host::wire::kOpRead, 2, back.data());
  EXPECT_EQ(back, data);
  EXPECT_LE(remote_device->largest_copy(), size_t{2} << 20);
}

TEST_F(TcpStaging, RefusedRequestsLeaveDeviceMemoryAloneAndTheConnectionUsable) {
  const auto before = remote_device->peek(0, 8192);
  auto data = random_bytes(8192, 4);
  local_device->fill(0, data);
  // The first op is fine, the second outside every exposed range: the whole batch is refused.
  const uint64_t outside = 16;
  EXPECT_EQ(status_of([&] {
              requester->transfer(server->address(),
                                  {Op{Direction::kWrite, remote_device->device_address(0),
                                      local_device->device(), 8192},
                                   Op{Direction::kRead, outside, local_device->device(), 16}},
                                  soon());
            }),
            Status::kInvalidInput);
  EXPECT_EQ(remote_device->peek(0, 8192), before);
  requester->transfer(
      server->address(),
      {Op{Direction::kWrite, remote_device->device_address(0), local_device->device(), 8192}},
      soon());
  EXPECT_EQ(remote_device->peek(0, 8192), data);
}

}  // namespace
}  // namespace memloom
