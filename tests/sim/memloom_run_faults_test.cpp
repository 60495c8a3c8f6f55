// memloom-run end to end, when things go wrong: failing and signalled ranks, the grace period,
// --timeout, fault injection, and signals to the launcher itself. Every test also checks that
// the job left no process, runtime directory or /dev/shm entry behind.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "tests/sim/launcher_harness.h"

namespace memloom::sim::testing {
namespace {

using Args = std::vector<std::string>;

Args sh_job(Args launcher_args, const std::string& body) {
  launcher_args.insert(launcher_args.end(),
                       {"--", "/bin/sh", "-c", std::string(kAnnounce) + "; " + body});
  return launcher_args;
}

std::string describe(const LauncherRun& run) {
  return "exit " + std::to_string(run.exit_code) + " after " + std::to_string(run.seconds) +
         " s\nstdout:\n" + run.out + "stderr:\n" + run.err;
}

// Sends `sig` to memloom-run once `count` lines "ready" have appeared on its stdout.
LauncherRunOptions signal_when_ready(int sig, size_t count) {
  LauncherRunOptions options;
  auto sent = std::make_shared<bool>(false);
  options.on_stdout = [sig, count, sent](pid_t launcher, const std::string& out) {
    size_t ready = 0;
    for (const std::string& line : lines_of(out)) ready += line.ends_with("] ready") ? 1 : 0;
    if (!*sent && ready >= count) {
      *sent = true;
      ::kill(launcher, sig);
    }
  };
  return options;
}

TEST(MemloomRunFaults, FailingRankCodePropagatesAndOthersStopAfterGrace) {
  LauncherRun run = run_memloom_run(
      sh_job({"-n", "3", "--grace", "1"},
             "if [ $MEMLOOM_RANK = 1 ]; then sleep 0.2; exit 7; fi; exec sleep 30"));
  EXPECT_EQ(run.exit_code, 7) << describe(run);
  // 0.2 s until the failure, then the full grace period before SIGTERM ends the sleepers.
  EXPECT_GE(run.seconds, 1.1) << describe(run);
  EXPECT_LT(run.seconds, 4.0) << describe(run);
  EXPECT_NE(run.err.find("memloom-run: rank 1 failed first: exited with code 7; stopped 2 rank(s)"),
            std::string::npos)
      << run.err;
  expect_job_cleaned_up(run, 3);
}

TEST(MemloomRunFaults, RankIgnoringSigtermGetsSigkillOneSecondLater) {
  LauncherRun run = run_memloom_run(
      sh_job({"-n", "2", "--grace", "0.2"},
             "if [ $MEMLOOM_RANK = 0 ]; then exit 3; fi; trap '' TERM; exec sleep 30"));
  EXPECT_EQ(run.exit_code, 3) << describe(run);
  EXPECT_GE(run.seconds, 1.1) << describe(run);  // 0.2 s grace + 1 s after SIGTERM
  EXPECT_LT(run.seconds, 4.0) << describe(run);
  expect_job_cleaned_up(run, 2);
}

TEST(MemloomRunFaults, RanksFinishingDuringGraceEndTheJobEarly) {
  LauncherRun run = run_memloom_run(
      sh_job({"-n", "2", "--grace", "10"},
             "if [ $MEMLOOM_RANK = 0 ]; then exit 5; fi; sleep 0.3; echo finished"));
  EXPECT_EQ(run.exit_code, 5) << describe(run);
  EXPECT_LT(run.seconds, 5.0) << describe(run);
  EXPECT_EQ(rank_lines(run.out, 1).back(), "finished");
  EXPECT_NE(run.err.find("rank 0 failed first: exited with code 5; stopped 0 rank(s)"),
            std::string::npos)
      << run.err;
  expect_job_cleaned_up(run, 2);
}

TEST(MemloomRunFaults, RankKilledBySignalGives128PlusSignal) {
  LauncherRun run =
      run_memloom_run(sh_job({"-n", "2", "--grace", "0.2"},
                             "if [ $MEMLOOM_RANK = 0 ]; then kill -USR1 $$; fi; exec sleep 30"));
  EXPECT_EQ(run.exit_code, 128 + SIGUSR1) << describe(run);
  EXPECT_NE(run.err.find("rank 0 failed first: killed by signal " + std::to_string(SIGUSR1) +
                         " (SIGUSR1)"),
            std::string::npos)
      << run.err;
  expect_job_cleaned_up(run, 2);
}

TEST(MemloomRunFaults, TimeoutExits124AndStopsRankDescendants) {
  LauncherRun run = run_memloom_run(
      sh_job({"-n", "2", "--timeout", "0.5"}, "sleep 30 & echo \"child=$!\"; wait"));
  EXPECT_EQ(run.exit_code, 124) << describe(run);
  EXPECT_GE(run.seconds, 0.45) << describe(run);
  EXPECT_LT(run.seconds, 4.0) << describe(run);
  EXPECT_NE(run.err.find("memloom-run: timed out after 0.5 s; stopped 2 rank(s)"),
            std::string::npos)
      << run.err;
  EXPECT_EQ(announced_children(run).size(), 2u) << run.out;
  expect_job_cleaned_up(run, 2);
}

TEST(MemloomRunFaults, KillRankInjectsSigkill) {
  LauncherRun run = run_memloom_run(sh_job(
      {"-n", "3", "--grace", "0.3", "--kill-rank", "1", "--kill-after", "0.3"}, "exec sleep 30"));
  EXPECT_EQ(run.exit_code, 137) << describe(run);
  EXPECT_GE(run.seconds, 0.55) << describe(run);
  EXPECT_LT(run.seconds, 4.0) << describe(run);
  EXPECT_NE(run.err.find("fault injection: SIGKILL to rank 1 after 0.3 s"), std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("rank 1 failed first: killed by signal 9 (SIGKILL)"), std::string::npos)
      << run.err;
  expect_job_cleaned_up(run, 3);
}

TEST(MemloomRunFaults, KillRankIsRepeatableAndKeepsItsOrder) {
  // Rank 1 dies later than rank 3; ranks 2 and 0 die at the same moment, in the order given.
  LauncherRun run = run_memloom_run(
      sh_job({"-n", "4", "--grace", "0.5", "--kill-rank", "1", "--kill-after", "0.35",
              "--kill-rank", "2", "--kill-after", "0.2", "--kill-rank", "0", "--kill-after", "0.2"},
             "exec sleep 30"));
  EXPECT_EQ(run.exit_code, 137) << describe(run);
  size_t rank2 = run.err.find("SIGKILL to rank 2 after 0.2 s");
  size_t rank0 = run.err.find("SIGKILL to rank 0 after 0.2 s");
  size_t rank1 = run.err.find("SIGKILL to rank 1 after 0.35 s");
  ASSERT_NE(rank2, std::string::npos) << run.err;
  ASSERT_NE(rank0, std::string::npos) << run.err;
  ASSERT_NE(rank1, std::string::npos) << run.err;
  EXPECT_LT(rank2, rank0);
  EXPECT_LT(rank0, rank1);
  EXPECT_NE(run.err.find("rank 2 failed first: killed by signal 9"), std::string::npos) << run.err;
  expect_job_cleaned_up(run, 4);
}

TEST(MemloomRunFaults, SigtermToLauncherIsForwardedThenEscalated) {
  // Rank 1 ignores SIGTERM: it must still be gone one second later.
  LauncherRun run = run_memloom_run(
      sh_job({"-n", "2"},
             "touch /dev/shm/memloom.$MEMLOOM_JOB_ID.x$MEMLOOM_RANK; "
             "if [ $MEMLOOM_RANK = 1 ]; then trap '' TERM; fi; echo ready; exec sleep 30"),
      signal_when_ready(SIGTERM, 2));
  EXPECT_EQ(run.exit_code, 128 + SIGTERM) << describe(run);
  EXPECT_GE(run.seconds, 1.0) << describe(run);
  EXPECT_LT(run.seconds, 5.0) << describe(run);
  EXPECT_NE(run.err.find("memloom-run: received SIGTERM; forwarded it to 2 rank(s)"),
            std::string::npos)
      << run.err;
  expect_job_cleaned_up(run, 2);
}

TEST(MemloomRunFaults, SigintToLauncherStopsTheJob) {
  LauncherRun run = run_memloom_run(sh_job({"-n", "3"}, "echo ready; exec sleep 30"),
                                    signal_when_ready(SIGINT, 3));
  EXPECT_EQ(run.exit_code, 128 + SIGINT) << describe(run);
  EXPECT_LT(run.seconds, 4.0) << describe(run);
  expect_job_cleaned_up(run, 3);
}

TEST(MemloomRunFaults, RanksDieWithAKilledLauncher) {
  // SIGKILL leaves the launcher no chance to clean up: PR_SET_PDEATHSIG must take the ranks.
  LauncherRun run = run_memloom_run(sh_job({"-n", "2"}, "echo ready; exec sleep 30"),
                                    signal_when_ready(SIGKILL, 2));
  EXPECT_EQ(run.signal, SIGKILL) << describe(run);
  std::vector<RankAnnouncement> ranks = announcements(run);
  ASSERT_EQ(ranks.size(), 2u) << run.out;
  for (const RankAnnouncement& rank : ranks) {
    EXPECT_TRUE(process_ended(rank.pid, std::chrono::seconds(2))) << rank.pid;
  }
  // The launcher's cleanup reaper removes the runtime directory it could not remove itself.
  const auto gone_by = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::filesystem::exists(ranks[0].runtime_dir) &&
         std::chrono::steady_clock::now() < gone_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(std::filesystem::exists(ranks[0].runtime_dir)) << ranks[0].runtime_dir;
  std::filesystem::remove_all(ranks[0].runtime_dir);  // whatever the outcome, leave nothing
}

TEST(MemloomRunFaults, KilledLauncherLeavesNoRuntimeDirectoryFiveTimesOutOfFive) {
  // The reproduction: SIGKILL of memloom-run left its runtime directory 5 of 5 times.
  for (int attempt = 0; attempt < 5; ++attempt) {
    LauncherRun run = run_memloom_run(
        sh_job({"-n", "1"}, "touch \"$MEMLOOM_RUNTIME_DIR/rank-file\"; echo ready; exec sleep 30"),
        signal_when_ready(SIGKILL, 1));
    ASSERT_EQ(run.signal, SIGKILL) << describe(run);
    std::vector<RankAnnouncement> ranks = announcements(run);
    ASSERT_EQ(ranks.size(), 1u) << run.out;
    const auto gone_by = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::filesystem::exists(ranks[0].runtime_dir) &&
           std::chrono::steady_clock::now() < gone_by) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_FALSE(std::filesystem::exists(ranks[0].runtime_dir))
        << "attempt " << attempt << ": " << ranks[0].runtime_dir;
    std::filesystem::remove_all(ranks[0].runtime_dir);
  }
}

}  // namespace
}  // namespace memloom::sim::testing
