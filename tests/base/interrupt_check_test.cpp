// The interrupt hook (memloom/interrupt.h) on the library's side: a wait on a descriptor that
// never becomes ready ends soon after an installed check says "interrupted", with its own status;
// a check that never says so, or none, leaves the wait as it was (it ends at its deadline); a check
// belongs to the thread that installed it.
#include "memloom/interrupt.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "memloom/error.h"
#include "src/base/fd_wait.h"
#include "tests/support/status_of.h"

namespace memloom::base {
namespace {

using Clock = std::chrono::steady_clock;
using ::memloom::testing::status_of;
using std::chrono::milliseconds;

// A pipe whose read end never becomes readable (nothing is written).
class SilentPipe {
 public:
  SilentPipe() { EXPECT_EQ(::pipe(fds_), 0); }
  ~SilentPipe() {
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  int read_end() const { return fds_[0]; }

 private:
  int fds_[2] = {-1, -1};
};

// The check of these tests: counts its calls, says "interrupted" once `at` has passed.
struct CountingCheck {
  Clock::time_point at = Clock::time_point::max();
  std::atomic<int> calls{0};

  static int check(void* context) {
    auto* self = static_cast<CountingCheck*>(context);
    self->calls++;
    return Clock::now() >= self->at ? 1 : 0;
  }
};

// Installs a check for one scope.
struct Installed {
  explicit Installed(CountingCheck& check) {
    memloom_interrupt_check_set(&CountingCheck::check, &check);
  }
  ~Installed() { memloom_interrupt_check_set(nullptr, nullptr); }
};

TEST(InterruptCheck, AWaitEndsWithin200MsOfTheCheckSayingInterrupted) {
  SilentPipe pipe;
  CountingCheck check;
  Installed installed(check);
  const auto start = Clock::now();
  check.at = start + milliseconds(300);
  const Status status =
      status_of([&] { wait_for(pipe.read_end(), POLLIN, Deadline::after(milliseconds(20000))); });
  const auto ended = Clock::now();
  EXPECT_EQ(status, Status::kInterrupted);
  EXPECT_GE(ended, check.at);
  EXPECT_LT(ended - check.at, milliseconds(200)) << "the check is asked at least every 100 ms";
  EXPECT_GE(check.calls.load(), 2) << "asked before it said interrupted too";
}

TEST(InterruptCheck, AnInterruptionCarriesItsOwnStatusAndMessage) {
  SilentPipe pipe;
  CountingCheck check;
  check.at = Clock::now();  // says interrupted whenever it is asked
  Installed installed(check);
  try {
    wait_for(pipe.read_end(), POLLIN, Deadline::after(milliseconds(20000)));
    ADD_FAILURE() << "the wait was not interrupted";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::kInterrupted);
    EXPECT_STREQ(status_name(error.status()), "interrupted");
    EXPECT_NE(std::string(error.what()).find("interrupted"), std::string::npos) << error.what();
  }
}

TEST(InterruptCheck, ACheckThatNeverSaysSoLeavesTheDeadlineAsItWas) {
  SilentPipe pipe;
  CountingCheck check;
  Installed installed(check);
  const auto start = Clock::now();
  EXPECT_FALSE(wait_ready(pipe.read_end(), POLLIN, Deadline::after(milliseconds(450))));
  const auto took = Clock::now() - start;
  EXPECT_GE(took, milliseconds(440));
  EXPECT_LT(took, milliseconds(1500));
  EXPECT_GE(check.calls.load(), 3) << "asked every 100 ms while waiting";
}

TEST(InterruptCheck, WithoutACheckAWaitEndsAtItsDeadline) {
  SilentPipe pipe;
  memloom_interrupt_check_set(nullptr, nullptr);
  const auto start = Clock::now();
  EXPECT_EQ(wait_for(pipe.read_end(), POLLIN, Deadline::after(milliseconds(300))),
            WaitResult::kTimeout);
  EXPECT_GE(Clock::now() - start, milliseconds(290));
}

TEST(InterruptCheck, ARemovedCheckIsNotAskedAgain) {
  SilentPipe pipe;
  CountingCheck check;
  check.at = Clock::now();
  memloom_interrupt_check_set(&CountingCheck::check, &check);
  memloom_interrupt_check_set(nullptr, nullptr);
  EXPECT_EQ(wait_for(pipe.read_end(), POLLIN, Deadline::after(milliseconds(250))),
            WaitResult::kTimeout);
  EXPECT_EQ(check.calls.load(), 0);
}

TEST(InterruptCheck, ACheckBelongsToTheThreadThatInstalledIt) {
  SilentPipe pipe;
  CountingCheck check;
  check.at = Clock::now();
  Installed installed(check);
  WaitResult other = WaitResult::kReady;
  std::thread waiter(
      [&] { other = wait_for(pipe.read_end(), POLLIN, Deadline::after(milliseconds(300))); });
  waiter.join();
  EXPECT_EQ(other, WaitResult::kTimeout);
  EXPECT_EQ(check.calls.load(), 0);
}

TEST(InterruptCheck, AReadyDescriptorIsReportedWithoutAskingTheCheck) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "x", 1), 1);
  CountingCheck check;
  check.at = Clock::now();
  Installed installed(check);
  EXPECT_TRUE(wait_ready(fds[0], POLLIN, Deadline::after(milliseconds(1000))));
  EXPECT_EQ(check.calls.load(), 0) << "a wait shorter than a slice never pays for the check";
  ::close(fds[0]);
  ::close(fds[1]);
}

}  // namespace
}  // namespace memloom::base
