// The harness's hang guard: a rank still running at the job's timeout is killed and reported as
// timed out, and MEMLOOM_TEST_TIMEOUT_SCALE stretches that timeout (loaded GPU machines) unless
// its value is unusable.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "tests/support/multi_process.h"

namespace memloom::testing {
namespace {

using Clock = std::chrono::steady_clock;

// Runs one rank that sleeps far past a 1 s timeout, with the scale set to `scale` (nullptr: unset);
// returns how long the job took and whether the rank was reported as timed out.
Clock::duration time_a_hung_rank(const char* scale, bool* timed_out) {
  if (scale != nullptr) {
    ::setenv("MEMLOOM_TEST_TIMEOUT_SCALE", scale, 1);
  } else {
    ::unsetenv("MEMLOOM_TEST_TIMEOUT_SCALE");
  }
  MultiProcessOptions options;
  options.ranks = 1;
  options.start_store = false;
  options.timeout = std::chrono::seconds(1);
  const auto start = Clock::now();
  auto results = run_ranks(
      options, [](const RankContext&) { std::this_thread::sleep_for(std::chrono::seconds(30)); });
  const auto took = Clock::now() - start;
  ::unsetenv("MEMLOOM_TEST_TIMEOUT_SCALE");
  *timed_out = results.size() == 1 && results[0].timed_out && !all_passed(results);
  return took;
}

TEST(MultiProcessHarness, AHungRankIsKilledAtTheTimeout) {
  bool timed_out = false;
  const auto took = time_a_hung_rank(nullptr, &timed_out);
  EXPECT_TRUE(timed_out);
  EXPECT_GE(took, std::chrono::milliseconds(1000));
  EXPECT_LT(took, std::chrono::milliseconds(2500));
}

TEST(MultiProcessHarness, TheScaleStretchesTheTimeout) {
  bool timed_out = false;
  const auto took = time_a_hung_rank("3", &timed_out);
  EXPECT_TRUE(timed_out);
  EXPECT_GE(took, std::chrono::milliseconds(3000));
  EXPECT_LT(took, std::chrono::milliseconds(6000));
}

TEST(MultiProcessHarness, AnUnusableScaleIsIgnored) {
  for (const char* scale : {"0.5", "11", "two", "2x", ""}) {
    SCOPED_TRACE(std::string("MEMLOOM_TEST_TIMEOUT_SCALE=") + scale);
    bool timed_out = false;
    const auto took = time_a_hung_rank(scale, &timed_out);
    EXPECT_TRUE(timed_out);
    EXPECT_LT(took, std::chrono::milliseconds(2500));
  }
}

}  // namespace
}  // namespace memloom::testing
