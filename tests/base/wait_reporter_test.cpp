// Waits that talk (src/base/wait_reporter.h) and the group rendezvous that uses them: a rank
// started without its peers says what it waits for past 5 s, and ranks given different world
// sizes are told so at once, with both values, instead of waiting for their deadline.
#include "src/base/wait_reporter.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "memloom/error.h"
#include "src/base/log.h"
#include "src/core/group.h"
#include "src/store/client.h"
#include "src/store/server.h"

namespace memloom::base {
namespace {

using std::chrono::milliseconds;

// Collects what is logged at warn and above for one scope.
class CapturedLog {
 public:
  CapturedLog() : old_level_(log::level()) {
    log::set_level(log::Level::kWarn);
    log::set_sink([this](log::Level, const std::string& message) {
      std::lock_guard<std::mutex> lock(mutex_);
      lines_.push_back(message);
    });
  }
  ~CapturedLog() {
    log::set_sink(nullptr);
    log::set_level(old_level_);
  }
  std::vector<std::string> lines() {
    std::lock_guard<std::mutex> lock(mutex_);
    return lines_;
  }

 private:
  log::Level old_level_;
  std::mutex mutex_;
  std::vector<std::string> lines_;
};

TEST(WaitReporter, SilentBeforeFiveSeconds) {
  CapturedLog log;
  WaitReporter reporter(Deadline::after(milliseconds(120000)));
  reporter.poll([] { return std::string("nothing"); });
  EXPECT_TRUE(log.lines().empty());
  EXPECT_GT(reporter.next_report_in().count(), 4000);
}

TEST(WaitReporter, RankLists) {
  EXPECT_EQ(rank_list({2, 3}), "2,3");
  EXPECT_EQ(rank_list({1, 2, 3, 4}, 2), "1,2 and 2 more");
  EXPECT_EQ(rank_list({}), "");
}

std::shared_ptr<store::Client> client_of(const store::Server& server) {
  return std::shared_ptr<store::Client>(store::Client::connect(server.url()));
}

TEST(GroupWaits, AMissingRankIsNamedAfterFiveSecondsThenTheWaitTimesOut) {
  auto server = store::Server::start({});
  CapturedLog log;
  const auto start = std::chrono::steady_clock::now();
  try {
    core::Group::create(client_of(*server), store::KeyPrefix("talk/"), 0, 2,
                        Deadline::after(milliseconds(7000)));
    FAIL() << "the group formed without rank 1";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::kTimeout);
    EXPECT_NE(std::string(error.what()).find("timed out waiting for rank(s) 1 to arrive"),
              std::string::npos)
        << error.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(8500));
  const auto lines = log.lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "waiting for rank 1 (of 2) to arrive at the creation of group 'talk/': 5 of 7 s");
}

TEST(GroupWaits, RanksGivenDifferentWorldSizesAreToldAtOnceWithBothValues) {
  auto server = store::Server::start({});
  const auto deadline = Deadline::after(milliseconds(60000));
  auto join = [&](int rank, int size) {
    return std::async(std::launch::async, [&, rank, size] {
      try {
        core::Group::create(client_of(*server), store::KeyPrefix("sizes/"), rank, size, deadline);
        return std::string("formed");
      } catch (const Error& error) {
        return std::string(error.what());
      }
    });
  };
  const auto start = std::chrono::steady_clock::now();
  auto rank0 = join(0, 2);
  std::this_thread::sleep_for(milliseconds(200));  // rank 0 arrives first
  auto rank1 = join(1, 4);
  const std::string said0 = rank0.get(), said1 = rank1.get();
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1200 + 200));
  EXPECT_NE(said1.find("rank 1 says world size 4, rank 0 says 2"), std::string::npos) << said1;
  EXPECT_NE(said0.find("rank 0 says world size 2, rank 1 says 4"), std::string::npos) << said0;
}

}  // namespace
}  // namespace memloom::base
