// The Transport under the caller's interrupt check (memloom/interrupt.h), on the TCP transport and
// on UCX (ctest runs the "*Transport*" tests both ways, tests/hal/CMakeLists.txt): a transfer that
// waits on a stopped peer ends soon after the check says "interrupted", with kInterrupted; the
// connection it used is not reused, so once the peer runs again the next transfer works.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hw/emulated/emulated_platform.h"
#include "hw/hal/transport.h"
#include "hw/host/ucx_data_path.h"
#include "memloom/error.h"
#include "memloom/interrupt.h"
#include "tests/hal/forked_transport_peer.h"
#include "tests/support/status_of.h"

namespace memloom {
namespace {

using Clock = std::chrono::steady_clock;
using Op = hal::TransferOp;
using Direction = hal::TransferOp::Direction;
using ::memloom::testing::status_of;
using std::chrono::milliseconds;

// Says "interrupted" once `at` has passed.
int interrupted_after(void* context) {
  return Clock::now() >= *static_cast<Clock::time_point*>(context) ? 1 : 0;
}

struct InstalledCheck {
  explicit InstalledCheck(Clock::time_point* at) {
    memloom_interrupt_check_set(&interrupted_after, at);
  }
  ~InstalledCheck() { memloom_interrupt_check_set(nullptr, nullptr); }
};

std::vector<std::byte> pattern(size_t bytes, uint8_t seed) {
  std::vector<std::byte> out(bytes);
  for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<std::byte>((i * 7 + seed) & 0xff);
  return out;
}

// UCX 1.13 aborts a serving process that, resumed, answers a read (its software GET reply) on an
// endpoint the requester closed meanwhile ("ucp_request.inl:346 Fatal: unexpected error: Endpoint
// timeout"), whether the requester gave up by its deadline or by an interruption: after an
// interrupted read on the rma path, the test stops before resuming the peer. On the am path
// memloom's own handler answers, and the peer is resumed and reused.
bool peer_survives_a_closed_read() {
  return host::chosen_ucx_data_path() == host::UcxDataPath::kAm;
}

void interrupt_then_reuse(Direction direction) {
  const bool resume = direction == Direction::kWrite || peer_survives_a_closed_read();
  hal_test::run_against_forked_peer([direction, resume](pid_t pid, const std::string& address,
                                                        uint64_t pointer) {
    auto transport = emulated::create_transport();
    const Deadline far = Deadline::after(std::chrono::seconds(20));
    auto data = pattern(1 << 20, 1);
    std::vector<std::byte> back(data.size());
    transport->transfer(address, {Op{Direction::kWrite, pointer, data.data(), data.size()}}, far);
    ASSERT_TRUE(hal_test::stop_process(pid));

    // The peer takes no bytes and answers nothing: without the check this waits 20 s.
    Clock::time_point at = Clock::now() + milliseconds(300);
    Status status = Status::kSuccess;
    {
      InstalledCheck installed(&at);
      status = status_of([&] {
        std::vector<std::byte>& local = direction == Direction::kWrite ? data : back;
        transport->transfer(address, {Op{direction, pointer, local.data(), local.size()}},
                            Deadline::after(std::chrono::seconds(20)));
      });
    }
    const auto ended = Clock::now();
    EXPECT_EQ(status, Status::kInterrupted);
    // Without peer error handling the call also waits (at most 2 s) for UCX to let go of its
    // buffers.
    const auto release =
        hal_test::transport_learns_of_failed_peers() ? milliseconds(0) : milliseconds(2100);
    EXPECT_LT(ended - at, milliseconds(200) + release)
        << "the check is asked at least every 100 ms";
    if (!resume) return;

    ::kill(pid, SIGCONT);
    data = pattern(data.size(), 2);
    transport->transfer(address,
                        {Op{Direction::kWrite, pointer, data.data(), data.size()},
                         Op{Direction::kRead, pointer, back.data(), back.size()}},
                        Deadline::after(std::chrono::seconds(20)));
    EXPECT_EQ(back, data) << "the transfer after the interruption";
  });
}

TEST(TransportInterrupt, AWriteToAStoppedPeerEndsWhenTheCheckSaysSoAndThePeerIsReusable) {
  interrupt_then_reuse(Direction::kWrite);
}

TEST(TransportInterrupt, AReadFromAStoppedPeerEndsWhenTheCheckSaysSoAndThePeerIsReusable) {
  interrupt_then_reuse(Direction::kRead);
}

TEST(TransportInterrupt, ACheckThatNeverSaysSoLeavesTheDeadlineAsItWas) {
  hal_test::run_against_forked_peer([](pid_t pid, const std::string& address, uint64_t pointer) {
    auto transport = emulated::create_transport();
    std::vector<std::byte> back(1 << 20);
    transport->transfer(address, {Op{Direction::kRead, pointer, back.data(), 16}},
                        Deadline::after(std::chrono::seconds(20)));
    ASSERT_TRUE(hal_test::stop_process(pid));
    Clock::time_point never = Clock::time_point::max();
    InstalledCheck installed(&never);
    const auto start = Clock::now();
    EXPECT_EQ(status_of([&] {
                transport->transfer(address, {Op{Direction::kRead, pointer, back.data(), 4096}},
                                    Deadline::after(milliseconds(400)));
              }),
              Status::kTimeout);
    const auto took = Clock::now() - start;
    EXPECT_GE(took, milliseconds(350));
    EXPECT_LT(took, std::chrono::seconds(3));
  });
}

}  // namespace
}  // namespace memloom
