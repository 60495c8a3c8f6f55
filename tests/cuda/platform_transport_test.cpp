// The Transport as the core gets it, from the Platform: the UCX transport; on the CUDA backend
// device memory is staged through page-locked host buffers, except on UCX with CUDA support, which
// registers it.
// Either side may be device memory.
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "tests/cuda/backend_test_helpers.h"

namespace memloom::backend_test {
namespace {

using hal::MemoryKind;
using Op = hal::TransferOp;
using Direction = hal::TransferOp::Direction;

class PlatformTransport : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& domain = platform().memory_domain();
    server = platform().create_transport();
    requester = platform().create_transport();
    stream = platform().create_stream(platform().current_device());
    segment = domain.allocate(MemoryKind::kDevice, platform().current_device(), kBytes);
    remote_device = static_cast<uint8_t*>(domain.map_anywhere(*segment));
    local_segment = domain.allocate(MemoryKind::kDevice, platform().current_device(), kBytes);
    local_device = static_cast<uint8_t*>(domain.map_anywhere(*local_segment));
    host.assign(kBytes, 0);
    domain.register_user_memory(host.data(), host.size());
    server->expose(remote_device, kBytes);
  }
  void TearDown() override {
    auto& domain = platform().memory_domain();
    server->withdraw(remote_device);
    domain.unregister_user_memory(host.data());
    domain.unmap_anywhere(remote_device, kBytes);
    domain.unmap_anywhere(local_device, kBytes);
  }
  static hal::Platform& platform() { return core::platform(); }
  uint64_t remote(size_t offset) { return reinterpret_cast<uint64_t>(remote_device + offset); }
  // Reads device memory back through a stream copy.
  std::vector<uint8_t> device_bytes(const void* device, size_t bytes) {
    stream->copy(host.data(), device, bytes);
    stream->synchronize(soon());
    return std::vector<uint8_t>(host.begin(), host.begin() + static_cast<long>(bytes));
  }

  // Local device memory gets pattern `seed` over [0, span), which is returned; remote device memory
  // zeros.
  std::vector<uint8_t> seed_device_memory(uint64_t seed, size_t span) {
    std::vector<uint8_t> data(span);
    for (size_t i = 0; i < span; ++i) data[i] = pattern(seed, i);
    std::memcpy(host.data(), data.data(), span);
    stream->copy(local_device, host.data(), span);
    stream->synchronize(soon());
    std::memset(host.data(), 0, span);
    stream->copy(remote_device, host.data(), span);
    stream->synchronize(soon());
    return data;
  }

  // The index of the first byte where `got` differs from `want`, or -1.
  static long first_difference(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want) {
    if (got.size() != want.size()) return 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i] != want[i]) return static_cast<long>(i);
    }
    return -1;
  }

  // 20 MiB: several staging chunks; a multiple of any backend's granularity.
  static constexpr size_t kBytes = 20u << 20;
  std::unique_ptr<hal::Transport> server, requester;
  std::unique_ptr<hal::Stream> stream;
  std::unique_ptr<hal::Segment> segment, local_segment;
  uint8_t* remote_device = nullptr;
  uint8_t* local_device = nullptr;
  std::vector<uint8_t> host;
};

TEST_F(PlatformTransport, HostToRemoteDeviceAndBackToLocalDevice) {
  for (size_t bytes : {size_t{1}, size_t{4097}, size_t{(9u << 20) + 3}, kBytes - 4096}) {
    const size_t offset = kBytes - bytes;  // ends exactly at the end of the exposed range
    std::vector<uint8_t> data(bytes);
    for (size_t i = 0; i < bytes; ++i) data[i] = pattern(bytes, i);
    requester->transfer(server->address(),
                        {Op{Direction::kWrite, remote(offset), data.data(), bytes}}, soon());
    EXPECT_EQ(first_difference(device_bytes(remote_device + offset, bytes), data), -1)
        << bytes << " B write";
    requester->transfer(server->address(),
                        {Op{Direction::kRead, remote(offset), local_device, bytes}}, soon());
    EXPECT_EQ(first_difference(device_bytes(local_device, bytes), data), -1)
        << bytes << " B read into device memory";
  }
}

TEST_F(PlatformTransport, DeviceToRemoteDeviceInABatch) {
  // Local device memory holds a pattern; 64 pieces go out in one call and come back in another.
  std::vector<uint8_t> data(kBytes);
  for (size_t i = 0; i < kBytes; ++i) data[i] = pattern(3, i);
  std::memcpy(host.data(), data.data(), kBytes);
  stream->copy(local_device, host.data(), kBytes);
  stream->synchronize(soon());
  const size_t piece = kBytes / 64;
  std::vector<Op> writes, reads;
  for (size_t p = 0; p < 64; ++p) {
    writes.push_back(Op{Direction::kWrite, remote(p * piece), local_device + p * piece, piece});
  }
  requester->transfer(server->address(), writes, soon());
  EXPECT_EQ(first_difference(device_bytes(remote_device, kBytes), data), -1);
  std::vector<uint8_t> back(kBytes);
  for (size_t p = 0; p < 64; ++p) {
    reads.push_back(Op{Direction::kRead, remote(p * piece), back.data() + p * piece, piece});
  }
  requester->transfer(server->address(), reads, soon());
  EXPECT_EQ(first_difference(back, data), -1);
}

// 1024 pieces of 4 KiB at every other slot, device to remote device and back into the slots
// between, in one call each: where device memory is staged, both sides copy 256 scattered pieces a
// message (one batch of copies on CUDA 13).
TEST_F(PlatformTransport, ScatteredSmallDeviceOpsInOneCall) {
  constexpr size_t kPiece = 4096, kPieces = 1024, kSpan = 2 * kPiece * kPieces;
  static_assert(kSpan <= kBytes);
  const std::vector<uint8_t> data = seed_device_memory(5, kSpan);
  std::vector<Op> writes, reads;
  for (size_t p = 0; p < kPieces; ++p) {
    const size_t even = 2 * p * kPiece, odd = even + kPiece;
    writes.push_back(Op{Direction::kWrite, remote(odd), local_device + even, kPiece});
    reads.push_back(Op{Direction::kRead, remote(odd), local_device + odd, kPiece});
  }
  requester->transfer(server->address(), writes, soon());
  requester->transfer(server->address(), reads, soon());
  std::vector<uint8_t> want_remote(kSpan, 0), want_local = data;
  for (size_t p = 0; p < kPieces; ++p) {
    const size_t even = 2 * p * kPiece, odd = even + kPiece;
    std::memcpy(want_remote.data() + odd, data.data() + even, kPiece);
    std::memcpy(want_local.data() + odd, data.data() + even, kPiece);
  }
  EXPECT_EQ(first_difference(device_bytes(remote_device, kSpan), want_remote), -1);
  EXPECT_EQ(first_difference(device_bytes(local_device, kSpan), want_local), -1);
}

// The same with pieces of odd sizes at odd offsets (no 16-byte words on either side), and local
// pieces in the reverse order of the remote ones.
TEST_F(PlatformTransport, UnalignedSmallDeviceOpsInOneCall) {
  constexpr size_t kPieces = 600, kPiece = 37, kStride = 101, kSpan = kPieces * kStride + 8;
  const std::vector<uint8_t> data = seed_device_memory(9, kSpan);
  std::vector<Op> writes, reads;
  std::vector<uint8_t> want_remote(kSpan, 0), want_local = data;
  for (size_t p = 0; p < kPieces; ++p) {
    const size_t at = 3 + p * kStride, mirrored = 3 + (kPieces - 1 - p) * kStride;
    writes.push_back(Op{Direction::kWrite, remote(at), local_device + mirrored, kPiece});
    std::memcpy(want_remote.data() + at, data.data() + mirrored, kPiece);
  }
  for (size_t p = 0; p < kPieces; ++p) {  // back into the 50 bytes after each local piece
    const size_t at = 3 + p * kStride;
    reads.push_back(Op{Direction::kRead, remote(at), local_device + at + 50, kPiece});
    std::memcpy(want_local.data() + at + 50, want_remote.data() + at, kPiece);
  }
  requester->transfer(server->address(), writes, soon());
  requester->transfer(server->address(), reads, soon());
  EXPECT_EQ(first_difference(device_bytes(remote_device, kSpan), want_remote), -1);
  EXPECT_EQ(first_difference(device_bytes(local_device, kSpan), want_local), -1);
}

TEST_F(PlatformTransport, RefusedRangesFailAndTheConnectionSurvives) {
  std::vector<uint8_t> bytes(8192, 1);
  EXPECT_EQ(status_of([&] {
              requester->transfer(server->address(),
                                  {Op{Direction::kWrite, remote(kBytes - 100), bytes.data(), 200}},
                                  soon());
            }),
            Status::kInvalidInput);
  EXPECT_EQ(status_of([&] {
              requester->transfer(
                  server->address(),
                  {Op{Direction::kRead, reinterpret_cast<uint64_t>(bytes.data()), bytes.data(), 8}},
                  soon());
            }),
            Status::kInvalidInput);
  requester->transfer(server->address(), {Op{Direction::kWrite, remote(0), bytes.data(), 8192}},
                      soon());
  EXPECT_EQ(first_difference(device_bytes(remote_device, 8192), bytes), -1);
}

TEST_F(PlatformTransport, AGonePeerIsACommunicationError) {
  const std::string address = server->address();
  server->withdraw(remote_device);
  server.reset();
  std::vector<uint8_t> bytes(64);
  EXPECT_EQ(status_of([&] {
              requester->transfer(address, {Op{Direction::kRead, 4096, bytes.data(), 64}}, soon());
            }),
            Status::kCommunication);
  server = platform().create_transport();  // for TearDown
  server->expose(remote_device, kBytes);
}

}  // namespace
}  // namespace memloom::backend_test
