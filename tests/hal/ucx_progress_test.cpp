// Who answers peers on a UCX transport's worker (hw/host/ucx_worker.h): a transfer's own thread
// while it runs, the progress thread otherwise. The progress thread stands aside during calls; in a
// process that no peer has connected to, the last call to end does not wake it (it takes over by
// itself within a millisecond), so a run of small transfers does not pay for waking it. A peer
// that comes right after such calls is still answered at once, not after the second the parked
// thread once slept when nothing woke it.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "hw/hal/transport.h"
#include "hw/host/ucx_transport.h"

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

}  // namespace
}  // namespace memloom
