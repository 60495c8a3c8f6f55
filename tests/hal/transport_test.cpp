// Conformance tests of the emulated backend's Transport, built through its factory: the host
// layer's UCX transport (ctest runs them again under other UCX settings, tests/hal/CMakeLists.txt).
// Most tests run two endpoints in one process (the bytes still cross the wire); the dead/hung peer
// tests serve from a forked process that they kill or stop.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "hw/emulated/emulated_platform.h"
#include "hw/hal/transport.h"
#include "memloom/error.h"
#include "tests/hal/forked_transport_peer.h"
#include "tests/support/multi_process.h"
#include "tests/support/status_of.h"

namespace memloom {
namespace {

using Clock = std::chrono::steady_clock;
using Op = hal::TransferOp;
using Direction = hal::TransferOp::Direction;

Deadline soon() {
  return Deadline::after(std::chrono::seconds(20));
}

uint64_t remote(const std::vector<std::byte>& buffer, size_t offset = 0) {
  return reinterpret_cast<uint64_t>(buffer.data() + offset);
}

std::vector<std::byte> random_bytes(size_t n, uint32_t seed) {
  std::vector<std::byte> out(n);
  std::mt19937_64 random(seed);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v = random();
    std::memcpy(out.data() + i, &v, 8);
  }
  for (; i < n; ++i) out[i] = static_cast<std::byte>(random());
  return out;
}

using hal_test::process_state;
using hal_test::run_against_forked_peer;
using ::memloom::testing::status_of;

class TransportPair : public ::testing::Test {
 protected:
  void SetUp() override {
    requester = emulated::create_transport();
    server = emulated::create_transport();
    exposed.assign(kExposed, std::byte{0});
    server->expose(exposed.data(), exposed.size());
  }
  void TearDown() override { EXPECT_TRUE(testing::leftover_shm_entries().empty()); }

  static constexpr size_t kExposed = (64u << 20) + 4096;
  // Declared first, so it outlives the server (whose serving threads may still be returning
  // from a send out of it when a read's requester already has every byte).
  std::vector<std::byte> exposed;
  std::unique_ptr<hal::Transport> requester, server;
};

TEST_F(TransportPair, AddressesNameTheTransportOnLoopbackByDefault) {
  if (std::getenv("MEMLOOM_HOST_ADDR") != nullptr) GTEST_SKIP() << "MEMLOOM_HOST_ADDR is set";
  EXPECT_EQ(server->address().rfind("ucx://127.0.0.1:", 0), 0u) << server->address();
  EXPECT_NE(server->address(), requester->address());
}

TEST_F(TransportPair, WritesAndReadsAreByteExactFromOneByteTo64MiB) {
  const size_t sizes[] = {1, 7, 4096, 65537, (1u << 20), (3u << 20) + 5, 64u << 20};
  uint32_t seed = 1;
  for (size_t size : sizes) {
    const size_t offset = size == (64u << 20) ? 4096 : 4096 - size % 4096;
    auto data = random_bytes(size, seed++);
    requester->transfer(server->address(),
                        {Op{Direction::kWrite, remote(exposed, offset), data.data(), size}},
                        soon());
    ASSERT_EQ(std::memcmp(exposed.data() + offset, data.data(), size), 0) << size << " B write";
    std::vector<std::byte> back(size);
    requester->transfer(server->address(),
                        {Op{Direction::kRead, remote(exposed, offset), back.data(), size}}, soon());
    ASSERT_EQ(back, data) << size << " B read";
  }
}

TEST_F(TransportPair, BatchesOfSmallOpsRunInOrder) {
  std::mt19937 random(7);
  for (size_t count : {1u, 10u, 1000u, 10000u}) {
    // Op i owns the 64-byte slot i: writes fill it, later reads in the same call read it back.
    std::vector<std::vector<std::byte>> written(count), read(count);
    std::vector<Op> ops;
    for (size_t i = 0; i < count; ++i) {
      size_t size = 1 + random() % 64;
      written[i] = random_bytes(size, static_cast<uint32_t>(count * 100000 + i));
      read[i].resize(size);
      ops.push_back(Op{Direction::kWrite, remote(exposed, i * 64), written[i].data(), size});
    }
    for (size_t i = 0; i < count; ++i) {
      ops.push_back(Op{Direction::kRead, remote(exposed, i * 64), read[i].data(), read[i].size()});
    }
    std::shuffle(ops.begin(), ops.begin() + static_cast<long>(count), random);
    auto start = Clock::now();
    requester->transfer(server->address(), ops, soon());
    auto elapsed = Clock::now() - start;
    for (size_t i = 0; i < count; ++i) {
      ASSERT_EQ(read[i], written[i]) << "op " << i << " of " << count;
      ASSERT_EQ(std::memcmp(exposed.data() + i * 64, written[i].data(), written[i].size()), 0);
    }
    // Coalesced: 10000 ops must not cost 10000 round trips.
    EXPECT_LT(elapsed, std::chrono::seconds(2)) << count << " ops";
  }
}

TEST_F(TransportPair, ManyThreadsShareTheConnection) {
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        auto data = random_bytes(100000, t * 1000 + i);
        std::vector<std::byte> back(data.size());
        size_t offset = static_cast<size_t>(t) * (1 << 20);
        requester->transfer(
            server->address(),
            {Op{Direction::kWrite, remote(exposed, offset), data.data(), data.size()},
             Op{Direction::kRead, remote(exposed, offset), back.data(), back.size()}},
            soon());
        if (back != data) ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
}

// One thread's calls give up mid-transfer (a deadline of a few ms for 16 MiB), closing the shared
// endpoint by force, while three others send small batches on it (before with_ep(), one of them
// could hand UCX the closed endpoint: a segfault in ucp_am_send_nbx). None crashes, hangs or moves
// wrong bytes, and the serving process lives on and serves a new endpoint afterwards.
TEST(TransportGiveUp, CallsGivingUpWhileOtherThreadsUseTheEndpointLeaveThemErrorsOnly) {
  run_against_forked_peer(
      [](pid_t pid, const std::string& address, uint64_t exposed) {
        auto requester = emulated::create_transport();
        std::atomic<bool> stop{false};
        std::atomic<int> wrong{0}, gave_up{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < 3; ++t) {
          threads.emplace_back([&, t] {
            // Bytes of a call that failed may still land later (README, "Cross-node transport"):
            // after a failure a thread moves on to memory it has not written (16 slots of 512 KiB).
            size_t slot = 0;
            for (uint32_t i = 0; !stop && slot < 16; ++i) {
              const uint64_t base =
                  exposed + (static_cast<uint64_t>(t) + 1) * (8u << 20) + slot * (512u << 10);
              auto data = random_bytes(64 * 64, t * 100000 + i);
              std::vector<std::byte> back(data.size());
              std::vector<Op> ops;
              for (size_t k = 0; k < 64; ++k) {
                ops.push_back(Op{Direction::kWrite, base + k * 8192, &data[k * 64], 64});
              }
              for (size_t k = 0; k < 64; ++k) {
                ops.push_back(Op{Direction::kRead, base + k * 8192, &back[k * 64], 64});
              }
              if (status_of([&] { requester->transfer(address, ops, soon()); }) !=
                  Status::kSuccess) {
                ++slot;
              } else if (back != data) {
                ++wrong;
              }
            }
          });
        }
        std::vector<std::byte> big(16u << 20, std::byte{1});
        // A few give-ups, apart: a storm of them (hundreds a second, each reconnecting) made
        // UCX 1.13's connection manager assert (tcp_sockcm_ep.c:416), not what this is about.
        for (int round = 0; round < 10; ++round) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          const Status status = status_of([&] {
            requester->transfer(
                address, {Op{Direction::kWrite, exposed + (40u << 20), big.data(), big.size()}},
                Deadline::after(std::chrono::milliseconds(3)));
          });
          if (status != Status::kSuccess) ++gave_up;
        }
        stop = true;
        for (auto& thread : threads) thread.join();
        EXPECT_EQ(wrong.load(), 0);
        EXPECT_GT(gave_up.load(), 0) << "no call gave up: the test did not test anything";
        EXPECT_NE(process_state(pid), 'Z') << "the serving process died";
        auto data = random_bytes(4096, 99);
        std::vector<std::byte> back(4096);
        requester->transfer(address,
                            {Op{Direction::kWrite, exposed, data.data(), data.size()},
                             Op{Direction::kRead, exposed, back.data(), back.size()}},
                            soon());
        EXPECT_EQ(back, data);
      },
      size_t{64} << 20);
}

TEST_F(TransportPair, RequestsOutsideExposedMemoryAreRefusedAndTheConnectionSurvives) {
  std::vector<std::byte> local(8192, std::byte{1});
  const uint64_t end = remote(exposed, exposed.size());
  // Entirely outside, straddling the end, and a batch whose third op is bad.
  EXPECT_EQ(status_of([&] {
              requester->transfer(server->address(),
                                  {Op{Direction::kRead, end + 4096, local.data(), 16}}, soon());
            }),
            Status::kInvalidInput);
  EXPECT_EQ(status_of([&] {
              requester->transfer(server->address(),
                                  {Op{Direction::kWrite, end - 8, local.data(), 16}}, soon());
            }),
            Status::kInvalidInput);
  EXPECT_EQ(status_of([&] {
              requester->transfer(server->address(),
                                  {Op{Direction::kWrite, remote(exposed), local.data(), 8192},
                                   Op{Direction::kRead, remote(exposed), local.data(), 10},
                                   Op{Direction::kWrite, 16, local.data(), 4096}},
                                  soon());
            }),
            Status::kInvalidInput);
  // The same connection still works, and withdrawn memory is refused too.
  auto data = random_bytes(5000, 3);
  requester->transfer(server->address(),
                      {Op{Direction::kWrite, remote(exposed, 100), data.data(), data.size()}},
                      soon());
  EXPECT_EQ(std::memcmp(exposed.data() + 100, data.data(), data.size()), 0);
  server->withdraw(exposed.data());
  EXPECT_EQ(status_of([&] {
              requester->transfer(server->address(),
                                  {Op{Direction::kRead, remote(exposed), local.data(), 1}}, soon());
            }),
            Status::kInvalidInput);
  server->expose(exposed.data(), exposed.size());
}

TEST_F(TransportPair, BadArgumentsAreRejected) {
  std::vector<std::byte> local(16);
  EXPECT_EQ(status_of([&] { server->expose(exposed.data() + 100, 10); }), Status::kInvalidInput);
  EXPECT_EQ(status_of([&] { server->expose(nullptr, 10); }), Status::kInvalidInput);
  EXPECT_EQ(status_of([&] { server->withdraw(exposed.data() + 1); }), Status::kInvalidInput);
  EXPECT_EQ(
      status_of([&] {
        requester->transfer("127.0.0.1:80", {Op{Direction::kRead, 1, local.data(), 1}}, soon());
      }),
      Status::kInvalidInput);
  EXPECT_EQ(status_of([&] {
              requester->transfer(server->address(),
                                  {Op{Direction::kRead, remote(exposed), nullptr, 1}}, soon());
            }),
            Status::kInvalidInput);
  // Nothing to do is not an error.
  requester->transfer(server->address(), {}, soon());
}

// Reads that give up while their reply is on its way (deadlines about as long as the read) leave
// the caller's buffer alone once they returned: a reply handler that already found the message
// must not copy or receive into it after the call ended. Each buffer is marked right after its
// call returned and checked after the next call has run the worker (ASan also sees a late write
// into the freed buffer). The peer is another process: UCX 1.13 aborts a process with two workers
// whose endpoints are closed and opened this fast ("async.c:643 Assertion `handler->async ==
// async' failed": a reused socket descriptor's event reaches the other worker).
TEST(Transport, ReadsThatGiveUpMidReplyNeverWriteTheBufferAfterReturning) {
  constexpr size_t kExposed = size_t{8} << 20;
  run_against_forked_peer(
      [](pid_t, const std::string& address, uint64_t pointer) {
        constexpr size_t kSizes[] = {4096, 1 << 20, kExposed};  // eager and rendezvous replies
        constexpr auto kMark = std::byte{0xA5};
        auto requester = emulated::create_transport();
        std::mt19937 random(11);
        std::vector<std::byte> probe(16);
        std::unique_ptr<std::vector<std::byte>> previous;
        int gave_up = 0;
        for (int round = 0; round < 200; ++round) {
          // A proven endpoint first (a call that gave up closed the last one), so the short
          // deadline below runs out during the read itself, not while connecting.
          requester->transfer(address, {Op{Direction::kRead, pointer, probe.data(), probe.size()}},
                              soon());
          if (previous != nullptr) {
            ASSERT_EQ(std::count(previous->begin(), previous->end(), kMark),
                      static_cast<long>(previous->size()))
                << "round " << round - 1 << ": the buffer was written after its call returned";
          }
          const size_t size = kSizes[round % 3];
          auto buffer = std::make_unique<std::vector<std::byte>>(size);
          std::vector<Op> ops;  // 1 MiB ops: several messages in flight when the deadline passes
          for (size_t at = 0; at < size; at += 1 << 20) {
            ops.push_back(Op{Direction::kRead, pointer + at, buffer->data() + at,
                             std::min<size_t>(1 << 20, size - at)});
          }
          const Status status = status_of([&] {
            requester->transfer(address, ops,
                                Deadline::after(std::chrono::milliseconds(1 + random() % 3)));
          });
          ASSERT_TRUE(status == Status::kSuccess || status == Status::kTimeout)
              << status_name(status);
          gave_up += status == Status::kTimeout;
          std::fill(buffer->begin(), buffer->end(), kMark);
          previous = std::move(buffer);
        }
        EXPECT_GT(gave_up, 0) << "no read gave up: the test did not test";
        std::printf("%d of 200 reads gave up\n", gave_up);
      },
      kExposed);
}

TEST(Transport, PeerRestartedAtANewAddressIsReachableAgain) {
  auto requester = emulated::create_transport();
  std::vector<std::byte> memory(4096), local(4096, std::byte{9});
  auto first = emulated::create_transport();
  first->expose(memory.data(), memory.size());
  const std::string old_address = first->address();
  requester->transfer(old_address, {Op{Direction::kWrite, remote(memory), local.data(), 100}},
                      soon());
  first.reset();
  auto start = Clock::now();
  EXPECT_EQ(status_of([&] {
              requester->transfer(
                  old_address, {Op{Direction::kWrite, remote(memory), local.data(), 100}}, soon());
            }),
            Status::kCommunication);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  auto second = emulated::create_transport();
  second->expose(memory.data(), memory.size());
  local.assign(local.size(), std::byte{4});
  requester->transfer(second->address(),
                      {Op{Direction::kWrite, remote(memory), local.data(), 4096}}, soon());
  EXPECT_EQ(memory, local);
}

// A transport that is gone leaves its port to nobody: the call is refused before UCX gets an
// endpoint to it (UCX 1.16 spins for good sending on a refused endpoint; ucx_endpoints.cpp), at
// once, saying so.
TEST(Transport, AnAddressNobodyListensAtIsRefusedAtOnceBeforeUcxConnects) {
  auto requester = emulated::create_transport();
  std::string address = emulated::create_transport()->address();  // destroyed at once
  std::vector<std::byte> local(64);
  for (int attempt = 0; attempt < 3; ++attempt) {
    const auto start = Clock::now();
    try {
      requester->transfer(address, {Op{Direction::kRead, 4096, local.data(), local.size()}},
                          soon());
      ADD_FAILURE() << "a transfer to " << address << " succeeded";
    } catch (const Error& error) {
      EXPECT_EQ(error.status(), Status::kCommunication);
      EXPECT_NE(std::string(error.what()).find("Connection refused (no transport listens there"),
                std::string::npos)
          << error.what();
    }
    EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(500));
  }
}

TEST(Transport, DeadPeerFailsWithinTheDeadline) {
  run_against_forked_peer([](pid_t pid, const std::string& address, uint64_t pointer) {
    auto transport = emulated::create_transport();
    auto data = random_bytes(1 << 20, 5);
    std::vector<std::byte> back(data.size());
    transport->transfer(address,
                        {Op{Direction::kWrite, pointer, data.data(), data.size()},
                         Op{Direction::kRead, pointer, back.data(), back.size()}},
                        soon());
    EXPECT_EQ(back, data);
    ::kill(pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto start = Clock::now();
    EXPECT_EQ(
        status_of([&] {
          transport->transfer(address, {Op{Direction::kRead, pointer, back.data(), 4096}}, soon());
        }),
        Status::kCommunication);
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(2)) << "deadline was 20 s";
  });
}

TEST(Transport, PeerKilledMidTransferFailsWithinTheDeadline) {
  run_against_forked_peer([](pid_t pid, const std::string& address, uint64_t pointer) {
    auto transport = emulated::create_transport();
    auto data = random_bytes(1 << 20, 6);
    // 256 MiB in one call (the peer's 1 MiB, over and over): far longer than the kill below.
    std::vector<Op> ops(256, Op{Direction::kWrite, pointer, data.data(), data.size()});
    std::thread killer([pid] {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      ::kill(pid, SIGKILL);
    });
    auto start = Clock::now();
    const Status status = status_of([&] { transport->transfer(address, ops, soon()); });
    killer.join();
    EXPECT_EQ(status, Status::kCommunication);
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(5)) << "deadline was 20 s";
  });
}

TEST(Transport, HungPeerTimesOutAtTheDeadline) {
  run_against_forked_peer([](pid_t pid, const std::string& address, uint64_t pointer) {
    auto transport = emulated::create_transport();
    std::vector<std::byte> back(1 << 20);
    transport->transfer(address, {Op{Direction::kRead, pointer, back.data(), 16}}, soon());
    ::kill(pid, SIGSTOP);
    // SIGSTOP takes effect asynchronously; wait until the peer is really stopped.
    for (int i = 0; i < 1000 && process_state(pid) != 'T'; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(process_state(pid), 'T');
    auto start = Clock::now();
    EXPECT_EQ(status_of([&] {
                transport->transfer(address,
                                    {Op{Direction::kRead, pointer, back.data(), back.size()}},
                                    Deadline::after(std::chrono::milliseconds(300)));
              }),
              Status::kTimeout);
    auto elapsed = Clock::now() - start;
    EXPECT_GE(elapsed, std::chrono::milliseconds(250));
    EXPECT_LT(elapsed, std::chrono::seconds(2));
  });
}

}  // namespace
}  // namespace memloom
