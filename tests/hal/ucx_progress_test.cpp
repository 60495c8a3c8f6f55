// Who answers peers on a UCX transport's worker (hw/host/ucx_worker.h): a transfer's own thread
// while it runs, the progress thread otherwise. The progress thread stands aside during calls; in a
// process that no peer has connected to, the last call to end does not wake it (it takes over by
// itself within a millisecond), so a run of small transfers does not pay for waking it. A peer
// that comes right after such calls is still answered at once, not after the second the parked
// thread once slept when nothing woke it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "hw/hal/transport.h"
#include "hw/host/ucx_transport.h"
#include "memloom/error.h"

namespace memloom {
namespace {

using Clock = std::chrono::steady_clock;
using Direction = hal::TransferOp::Direction;

uint64_t address_of(const void* memory) {
  return reinterpret_cast<uint64_t>(memory);
}

TEST(UcxProgress, AProcessThatOnlyRequestedAnswersAPeerRightAfterItsCalls) {
  // Far below the 1 s that failed, far above a connection's set-up under sanitizers.
  constexpr auto kPrompt = std::chrono::milliseconds(700);
  for (int round = 0; round < 4; ++round) {
    host::UcxTransport requester, owner;  // fresh: nobody has connected to `requester` yet
    std::vector<uint8_t> at_requester(64, 0), at_owner(64, 0), value(8, uint8_t(round + 1));
    requester.expose(at_requester.data(), at_requester.size());
    owner.expose(at_owner.data(), at_owner.size());
    // Enough calls that the requester's progress thread stands aside during one of them.
    for (int call = 0; call < 20; ++call) {
      requester.transfer(owner.address(),
                         {{Direction::kWrite, address_of(at_owner.data()), value.data(), 8}},
                         Deadline::after(std::chrono::seconds(20)));
    }
    const auto start = Clock::now();
    owner.transfer(requester.address(),
                   {{Direction::kWrite, address_of(at_requester.data()), value.data(), 8}},
                   Deadline::after(std::chrono::seconds(20)));
    const auto took = Clock::now() - start;
    EXPECT_LT(took, kPrompt) << "round " << round << ": the requester answered after "
                             << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                             << " ms";
    EXPECT_EQ(std::vector<uint8_t>(at_requester.begin(), at_requester.begin() + 8), value);
    EXPECT_EQ(std::vector<uint8_t>(at_owner.begin(), at_owner.begin() + 8), value);
  }
}

// An owner destroyed while peers keep writing to it, and connecting again once it refuses them.
// Its listener goes first: a peer accepted while the other endpoints closed was closed after the
// worker was gone (a segfault in ucp_ep_close_nbx, 5 of 5 runs here). And the progress thread,
// which keeps progressing while messages come closer than its spin apart, must still stop.
TEST(UcxProgress, ATransportThatPeersKeepBusyIsDestroyedPromptly) {
  constexpr int kWriters = 4;
  std::vector<uint8_t> at_owner(64, 0), value(8, 7);
  auto owner = std::make_unique<host::UcxTransport>();
  owner->expose(at_owner.data(), at_owner.size());
  const std::string address = owner->address();
  std::vector<std::unique_ptr<host::UcxTransport>> requesters;
  for (int i = 0; i < kWriters; ++i) requesters.push_back(std::make_unique<host::UcxTransport>());
  std::atomic<bool> stop{false};
  std::atomic<int> writes{0};
  std::vector<std::thread> writers;
  for (int i = 0; i < kWriters; ++i) {
    writers.emplace_back([&, i] {
      // Bounded, so that a destroy that waits for the writers to pause fails the test, not hangs.
      const auto give_up = Clock::now() + std::chrono::seconds(10);
      while (!stop.load() && Clock::now() < give_up) {
        try {
          requesters[i]->transfer(
              address, {{Direction::kWrite, address_of(at_owner.data()), value.data(), 8}},
              Deadline::after(std::chrono::seconds(2)));
          ++writes;
        } catch (const Error&) {
          // The owner is going or gone.
        }
      }
    });
  }
  const auto warmed_by = Clock::now() + std::chrono::seconds(5);
  while (writes.load() < 400 && Clock::now() < warmed_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const auto start = Clock::now();
  owner.reset();
  const auto took = Clock::now() - start;
  stop = true;
  for (auto& writer : writers) writer.join();
  EXPECT_GE(writes.load(), 400);
  // Its own bounds: up to 2 s for UCX to hand back requests, 2 s an endpoint's close.
  EXPECT_LT(took, std::chrono::seconds(5))
      << "destroying the owner took "
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
}

}  // namespace
}  // namespace memloom
