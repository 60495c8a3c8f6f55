// The Transport under the caller's interrupt check (memloom/interrupt.h), on UCX with each UCX_TLS
// ctest gives the "*Transport*" tests (tests/hal/CMakeLists.txt): a transfer that waits on a
// stopped peer ends soon after the check says "interrupted", with kInterrupted; the connection it
// used is not reused, so once the peer runs again the next transfer works, and nothing the caller
// puts in its buffers after the call returned reaches the peer.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "hw/emulated/emulated_platform.h"
#include "hw/hal/transport.h"
#include "hw/host/ucx_transport.h"
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
    // With or without peer error handling: without it, UCX holds only the transport's own buffers,
    // so the call need not wait for UCX to let go of the caller's.
    EXPECT_LT(ended - at, milliseconds(200)) << "the check is asked at least every 100 ms";
    if (!resume) return;

    ::kill(pid, SIGCONT);
    if (direction == Direction::kWrite) {
      // The caller's buffer is its own again once the call returned: bytes put there now must not
      // reach the peer, whatever UCX still holds of the interrupted write.
      const auto after_return = pattern(data.size(), 3);
      std::copy(after_return.begin(), after_return.end(), data.begin());
      std::this_thread::sleep_for(milliseconds(300));  // the transport's worker progresses
      transport->transfer(address, {Op{Direction::kRead, pointer, back.data(), back.size()}},
                          Deadline::after(std::chrono::seconds(20)));
      size_t leaked_pages = 0;
      for (size_t at = 0; at < back.size(); at += 4096) {
        leaked_pages +=
            std::equal(back.begin() + at, back.begin() + at + 4096, after_return.begin() + at);
      }
      EXPECT_EQ(leaked_pages, 0u) << "bytes written to the buffer after the call returned reached "
                                     "the peer";
    }
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

// A transport closed while UCX may still hold a request to a stopped peer (without peer error
// handling UCX 1.13 can keep one queued for good) closes within a bounded time, and the process
// goes on: destroying a UCX worker with a request still queued aborts the process.
TEST(TransportInterrupt, ATransportClosedWhileItsPeerIsStoppedClosesAndTheProcessGoesOn) {
  hal_test::run_against_forked_peer([](pid_t pid, const std::string& address, uint64_t pointer) {
    auto transport = emulated::create_transport();
    auto data = pattern(1 << 20, 4);
    transport->transfer(address, {Op{Direction::kWrite, pointer, data.data(), 64}},
                        Deadline::after(std::chrono::seconds(20)));
    ASSERT_TRUE(hal_test::stop_process(pid));
    EXPECT_EQ(status_of([&] {
                transport->transfer(address,
                                    {Op{Direction::kWrite, pointer, data.data(), data.size()}},
                                    Deadline::after(milliseconds(300)));
              }),
              Status::kTimeout);
    const auto start = Clock::now();
    transport.reset();
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(8))
        << "closing waits at most 2 s for UCX's requests, and 2 s per endpoint";
    ::kill(pid, SIGCONT);
  });
}

}  // namespace
}  // namespace memloom
