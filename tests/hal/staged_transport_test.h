// What the UCX transport's staging suite (UcxStaging) sets up and checks: a server exposing 64 MiB
// (+4 KiB) of "device memory" the CPU cannot touch and 64 MiB of host memory, and a requester with
// 64 MiB of device memory of its own (protected_memory_staging.h). The suite derives its fixture
// and adds its UCX-specific tests.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "hw/hal/transport.h"
#include "hw/host/ucx_transport.h"
#include "tests/hal/protected_memory_staging.h"

namespace memloom::test {

class StagedTransportTest : public ::testing::Test {
 protected:
  using Op = hal::TransferOp;
  using Direction = hal::TransferOp::Direction;
  static constexpr size_t kBytes = 64u << 20;

  static Deadline soon() { return Deadline::after(std::chrono::seconds(30)); }

  // Called by the suite's SetUp.
  void start(const hal::TransportOptions& options) {
    auto server_staging = std::make_unique<ProtectedMemoryStaging>(kBytes + 4096);
    auto requester_staging = std::make_unique<ProtectedMemoryStaging>(kBytes);
    remote_device = server_staging.get();
    local_device = requester_staging.get();
    server = std::make_unique<host::UcxTransport>(options, std::move(server_staging));
    requester = std::make_unique<host::UcxTransport>(options, std::move(requester_staging));
    server->expose(remote_device->device(), kBytes + 4096);
    remote_host.assign(kBytes, std::byte{0});
    server->expose(remote_host.data(), remote_host.size());
  }
  void TearDown() override {
    requester.reset();
    server.reset();
  }

  // Writes then reads, device memory on both sides, of 1 B to 64 MiB: byte-exact.
  void check_device_round_trips() {
    uint32_t seed = 1;
    for (size_t size :
         {size_t{1}, size_t{4099}, (size_t{2} << 20) + 1, (size_t{5} << 20) + 3, kBytes}) {
      const size_t offset = size == kBytes ? 0 : 4096 - size % 4096;
      auto data = random_bytes(size, seed++);
      local_device->fill(0, data);
      requester->transfer(server->address(),
                          {Op{Direction::kWrite, remote_device->device_address(offset),
                              local_device->device(), size}},
                          soon());
      ASSERT_EQ(remote_device->peek(offset, size), data) << size << " B device-to-device write";
      local_device->fill(0, std::vector<std::byte>(size, std::byte{0}));
      requester->transfer(server->address(),
                          {Op{Direction::kRead, remote_device->device_address(offset),
                              local_device->device(), size}},
                          soon());
      ASSERT_EQ(local_device->peek(0, size), data) << size << " B device-to-device read";
    }
  }

  // Op i writes slot i from device or host memory (alternating) to remote device or host memory
  // (every third to host); the reads that follow in the same call read every slot back.
  void check_mixed_ordered_batch() {
    constexpr size_t kCount = 2000, kSlot = 64;
    std::vector<std::byte> local_host(kCount * kSlot);
    auto written = random_bytes(kCount * kSlot, 9);
    local_device->fill(0, written);
    std::memcpy(local_host.data(), written.data(), written.size());
    std::vector<std::byte> back_host(kCount * kSlot);
    std::vector<Op> ops;
    auto remote = [&](size_t i) {
      return i % 3 == 0 ? reinterpret_cast<uint64_t>(remote_host.data() + i * kSlot)
                        : remote_device->device_address(i * kSlot);
    };
    for (size_t i = 0; i < kCount; ++i) {
      std::byte* local = i % 2 == 0 ? local_device->device() : local_host.data();
      ops.push_back(Op{Direction::kWrite, remote(i), local + i * kSlot, kSlot});
    }
    for (size_t i = 0; i < kCount; ++i) {
      // Reads land in device memory past the written bytes, or in host memory.
      std::byte* local = i % 2 == 0 ? local_device->device() + kCount * kSlot : back_host.data();
      ops.push_back(Op{Direction::kRead, remote(i), local + i * kSlot, kSlot});
    }
    requester->transfer(server->address(), ops, soon());
    auto device_back = local_device->peek(kCount * kSlot, kCount * kSlot);
    for (size_t i = 0; i < kCount; ++i) {
      const std::byte* want = written.data() + i * kSlot;
      const std::byte* got =
          i % 2 == 0 ? device_back.data() + i * kSlot : back_host.data() + i * kSlot;
      ASSERT_EQ(std::memcmp(got, want, kSlot), 0) << "slot " << i;
    }
  }

  ProtectedMemoryStaging* remote_device = nullptr;  // owned by server
  ProtectedMemoryStaging* local_device = nullptr;   // owned by requester
  std::unique_ptr<host::UcxTransport> server, requester;
  std::vector<std::byte> remote_host;
};

}  // namespace memloom::test
