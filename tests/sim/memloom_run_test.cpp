// memloom-run end to end, when things go right: rank environment, output tagging, the store,
// cleanup, and the command-line contract.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "memloom/error.h"
#include "src/store/client.h"
#include "src/store/server.h"
#include "tests/sim/launcher_harness.h"

namespace memloom::sim::testing {
namespace {

using Args = std::vector<std::string>;

std::string sh_script(const std::string& body) {
  return std::string(kAnnounce) + "; " + body;
}

Args sh_job(Args launcher_args, const std::string& body) {
  launcher_args.insert(launcher_args.end(), {"--", "/bin/sh", "-c", sh_script(body)});
  return launcher_args;
}

std::string describe(const LauncherRun& run) {
  return "exit " + std::to_string(run.exit_code) + "\nstdout:\n" + run.out + "stderr:\n" + run.err;
}

TEST(MemloomRun, HelpDocumentsOptionsEnvironmentAndExitCodes) {
  LauncherRun run = run_memloom_run({"--help"});
  ASSERT_EQ(run.exit_code, 0) << describe(run);
  for (const char* word :
       {"-n N", "--nodes", "--devices-per-node", "--store", "--timeout", "--grace", "--kill-rank",
        "--kill-after", "--tag-output", "--no-tag-output", "MEMLOOM_RANK", "MEMLOOM_RUNTIME_DIR",
        "MEMLOOM_EMU_DEVICES", "MEMLOOM_JOB_SECRET", "Exit status", "124"}) {
    EXPECT_NE(run.out.find(word), std::string::npos) << word;
  }
  EXPECT_TRUE(run.err.empty());
}

TEST(MemloomRun, BadOptionsExitTwoWithAMessage) {
  const std::vector<Args> bad = {
      {},
      {"-n", "0", "--", "true"},
      {"-n", "abc", "--", "true"},
      {"-n", "2"},
      {"--bogus", "-n", "2", "--", "true"},
      {"-n", "2", "--nodes", "3", "--", "true"},
      {"-n", "2", "--store", "http://127.0.0.1:80", "--", "true"},
      {"-n", "2", "--kill-rank", "1", "--", "true"},
      {"-n", "2", "--kill-rank", "5", "--kill-after", "1", "--", "true"},
      {"-n", "2", "--timeout", "-1", "--", "true"},
      {"-n", "2", "--grace", "soon", "--", "true"},
  };
  for (const Args& args : bad) {
    LauncherRun run = run_memloom_run(args);
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(run.exit_code, 2) << joined << "\n" << describe(run);
    EXPECT_EQ(run.err.rfind("memloom-run: ", 0), 0u) << joined << "\n" << run.err;
    EXPECT_NE(run.err.find("--help"), std::string::npos) << joined;
    EXPECT_TRUE(run.out.empty()) << joined;
  }
}

TEST(MemloomRun, MissingProgramExits127) {
  LauncherRun run = run_memloom_run({"-n", "2", "--", "/nonexistent/memloom-test-program"});
  EXPECT_EQ(run.exit_code, 127) << describe(run);
  EXPECT_NE(run.err.find("/nonexistent/memloom-test-program"), std::string::npos) << run.err;
  run = run_memloom_run({"-n", "1", "--", "memloom-no-such-program-in-path"});
  EXPECT_EQ(run.exit_code, 127) << describe(run);
  EXPECT_NE(run.err.find("not found in PATH"), std::string::npos) << run.err;
}

// One line per rank: "env RANK WORLD LOCAL_RANK LOCAL_SIZE NODE DEVICE EMU_DEVICES STORE JOB DIR".
const char* kPrintEnvironment =
    "echo \"env $MEMLOOM_RANK $MEMLOOM_WORLD_SIZE $MEMLOOM_LOCAL_RANK $MEMLOOM_LOCAL_SIZE "
    "$MEMLOOM_NODE $MEMLOOM_DEVICE $MEMLOOM_EMU_DEVICES $MEMLOOM_STORE_URL $MEMLOOM_JOB_ID "
    "$MEMLOOM_RUNTIME_DIR\"; test -d \"$MEMLOOM_RUNTIME_DIR\" && echo runtime-dir-exists";

struct SeenEnvironment {
  int world, local_rank, local_size, device, emu_devices;
  std::string node, store, job, dir;
};

std::map<int, SeenEnvironment> parse_environment(const LauncherRun& run, int ranks) {
  std::map<int, SeenEnvironment> seen;
  for (int rank = 0; rank < ranks; ++rank) {
    for (const std::string& line : rank_lines(run.out, rank)) {
      if (line.rfind("env ", 0) != 0) continue;
      std::istringstream in(line.substr(4));
      int reported_rank = -1;
      SeenEnvironment env{};
      in >> reported_rank >> env.world >> env.local_rank >> env.local_size >> env.node >>
          env.device >> env.emu_devices >> env.store >> env.job >> env.dir;
      EXPECT_EQ(reported_rank, rank) << line;
      seen[rank] = env;
    }
    EXPECT_EQ(rank_lines(run.out, rank).size(), 3u) << "rank " << rank << "\n" << run.out;
  }
  return seen;
}

TEST(MemloomRun, SetsRankEnvironmentForFourRanksOnTwoNodes) {
  LauncherRunOptions options;
  options.env["MEMLOOM_RANK"] = "99";  // the launcher's own variables must not leak through
  options.env["MEMLOOM_BACKEND"] = "emulated";  // 8 devices per node (cuda: the GPUs visible)
  LauncherRun run =
      run_memloom_run(sh_job({"-n", "4", "--nodes", "2"}, kPrintEnvironment), options);
  ASSERT_EQ(run.exit_code, 0) << describe(run);
  EXPECT_TRUE(run.err.empty()) << run.err;
  auto seen = parse_environment(run, 4);
  ASSERT_EQ(seen.size(), 4u) << run.out;
  const std::string job = seen[0].job;
  EXPECT_EQ(job.size(), 17u) << job;
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  const std::string parent = (xdg != nullptr && xdg[0] == '/') ? xdg : "/tmp";
  for (int rank = 0; rank < 4; ++rank) {
    const SeenEnvironment& env = seen[rank];
    EXPECT_EQ(env.world, 4);
    EXPECT_EQ(env.local_rank, rank % 2);
    EXPECT_EQ(env.local_size, 2);
    EXPECT_EQ(env.node, job + "-node" + std::to_string(rank / 2));
    EXPECT_EQ(env.device, rank % 2);
    EXPECT_EQ(env.emu_devices, 8);
    EXPECT_EQ(env.store.rfind("tcp://127.0.0.1:", 0), 0u) << env.store;
    EXPECT_EQ(env.store, seen[0].store);
    EXPECT_EQ(env.job, job);
    EXPECT_EQ(env.dir, parent + "/memloom-" + job);
    EXPECT_EQ(rank_lines(run.out, rank)[2], "runtime-dir-exists");
  }
  expect_job_cleaned_up(run, 4);
}

TEST(MemloomRun, DealsUnevenBlocksAndDevicesModuloD) {
  LauncherRun run = run_memloom_run(
      sh_job({"-n", "5", "--nodes", "2", "--devices-per-node", "2"}, kPrintEnvironment));
  ASSERT_EQ(run.exit_code, 0) << describe(run);
  auto seen = parse_environment(run, 5);
  ASSERT_EQ(seen.size(), 5u);
  const int node[] = {0, 0, 0, 1, 1};
  const int local[] = {0, 1, 2, 0, 1};
  for (int rank = 0; rank < 5; ++rank) {
    EXPECT_EQ(seen[rank].node, seen[0].job + "-node" + std::to_string(node[rank]));
    EXPECT_EQ(seen[rank].local_rank, local[rank]);
    EXPECT_EQ(seen[rank].local_size, node[rank] == 0 ? 3 : 2);
    EXPECT_EQ(seen[rank].device, local[rank] % 2);
    EXPECT_EQ(seen[rank].emu_devices, 2);
  }
  expect_job_cleaned_up(run, 5);
}

TEST(MemloomRun, TagsLinesAndCompletesPartialOnes) {
  LauncherRun run = run_memloom_run(sh_job(
      {"-n", "2"},
      "printf 'hel'; sleep 0.2; printf 'lo\\nsecond\\n'; printf 'warn\\n' >&2; printf 'tail'"));
  ASSERT_EQ(run.exit_code, 0) << describe(run);
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<std::string> lines = rank_lines(run.out, rank);
    ASSERT_EQ(lines.size(), 4u) << run.out;
    EXPECT_EQ(lines[0].rfind("info pid=", 0), 0u);
    EXPECT_EQ(lines[1], "hello");
    EXPECT_EQ(lines[2], "second");
    EXPECT_EQ(lines[3], "tail");
    EXPECT_EQ(rank_lines(run.err, rank), std::vector<std::string>{"warn"}) << run.err;
  }
  for (const std::string& line : lines_of(run.out)) {
    EXPECT_EQ(line.rfind("[rank ", 0), 0u) << line;
  }
  expect_job_cleaned_up(run, 2);
}

TEST(MemloomRun, LinesOfDifferentRanksNeverInterleave) {
  // awk writes to a pipe in 4 KiB blocks, so lines reach the launcher cut at arbitrary points.
  LauncherRun run =
      run_memloom_run({"-n", "4", "--", "awk", "-v", "w=400",
                       "BEGIN { r = ENVIRON[\"MEMLOOM_RANK\"]; "
                       "for (i = 0; i < w; i++) printf \"%s-%0300d-%d\\n\", r, 0, i }"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // Every line must be exactly "[rank R] R-<300 zeros>-<index>" (std::regex would do, but
  // trips GCC 12's maybe-uninitialized warning in sanitizer builds).
  const std::string zeros(300, '0');
  std::map<int, int> next_index;
  size_t count = 0;
  for (const std::string& line : lines_of(run.out)) {
    ASSERT_GT(line.size(), 8u + 2 + 300 + 2) << line.substr(0, 80);
    ASSERT_EQ(line.substr(0, 6), "[rank ") << line.substr(0, 80);
    const char rank_char = line[6];
    ASSERT_TRUE(rank_char >= '0' && rank_char <= '3') << line.substr(0, 80);
    ASSERT_EQ(line.substr(7, 2), "] ") << line.substr(0, 80);
    ASSERT_EQ(line.substr(9, 2), std::string(1, rank_char) + "-") << line.substr(0, 80);
    ASSERT_EQ(line.substr(11, 300), zeros) << line.substr(0, 80);
    ASSERT_EQ(line[311], '-') << line.substr(0, 80);
    const std::string index = line.substr(312);
    ASSERT_EQ(index.find_first_not_of("0123456789"), std::string::npos) << line.substr(0, 80);
    int rank = rank_char - '0';
    EXPECT_EQ(std::stoi(index), next_index[rank]++);  // in order, none lost
    ++count;
  }
  EXPECT_EQ(count, 1600u);
}

TEST(MemloomRun, NoTagOutputPassesOutputThrough) {
  LauncherRun run =
      run_memloom_run(sh_job({"--no-tag-output", "-n", "2"},
                             "echo \"plain $MEMLOOM_RANK\"; echo \"err $MEMLOOM_RANK\" >&2"));
  ASSERT_EQ(run.exit_code, 0) << describe(run);
  std::multiset<std::string> out;
  for (const std::string& line : lines_of(run.out)) {
    if (line.rfind("info pid=", 0) != 0) out.insert(line);
  }
  EXPECT_EQ(out, (std::multiset<std::string>{"plain 0", "plain 1"}));
  std::vector<std::string> err = lines_of(run.err);
  EXPECT_EQ(std::multiset<std::string>(err.begin(), err.end()),
            (std::multiset<std::string>{"err 0", "err 1"}));
  expect_job_cleaned_up(run, 2);
}

TEST(MemloomRun, EmbeddedStoreAnswersTheRanks) {
  LauncherRun run = run_memloom_run(
      sh_job({"-n", "4", "--nodes", "2"}, std::string("exec ") + SIM_STORE_COUNTER_RANK_PATH));
  ASSERT_EQ(run.exit_code, 0) << describe(run);
  for (int rank = 0; rank < 4; ++rank) {
    std::vector<std::string> lines = rank_lines(run.out, rank);
    ASSERT_EQ(lines.size(), rank == 0 ? 3u : 2u) << run.out;
    EXPECT_EQ(lines[1].rfind("store=tcp://127.0.0.1:", 0), 0u) << lines[1];
  }
  EXPECT_EQ(rank_lines(run.out, 0)[2], "counter reached 4");
  expect_job_cleaned_up(run, 4);
}

std::set<std::string> job_secrets(const LauncherRun& run, int ranks) {
  std::set<std::string> secrets;
  for (int rank = 0; rank < ranks; ++rank) {
    for (const std::string& line : rank_lines(run.out, rank)) {
      if (line.rfind("secret ", 0) == 0) secrets.insert(line.substr(7));
    }
  }
  return secrets;
}

TEST(MemloomRun, UsesAnExternalStore) {
  store::ServerOptions server_options;
  server_options.listen_url = "tcp://127.0.0.1:0";
  server_options.namespace_grace = std::chrono::minutes(1);  // the job's keys outlive its ranks
  auto server = store::Server::start(server_options);
  LauncherRun run = run_memloom_run(sh_job(
      {"-n", "3", "--store", server->url()},
      std::string("echo \"secret $MEMLOOM_JOB_SECRET\"; exec ") + SIM_STORE_COUNTER_RANK_PATH));
  ASSERT_EQ(run.exit_code, 0) << describe(run);
  for (int rank = 0; rank < 3; ++rank) {
    std::vector<std::string> lines = rank_lines(run.out, rank);
    ASSERT_GE(lines.size(), 3u) << run.out;
    EXPECT_EQ(lines[2], "store=" + server->url());
  }
  // The ranks' increments are in the test's own store.
  std::vector<RankAnnouncement> ranks = announcements(run);
  ASSERT_EQ(ranks.size(), 3u);
  // They are in the job's namespace (MEMLOOM_JOB_ID), bound to the job's secret: knowing the
  // name is not enough to join it, the secret the ranks got is.
  store::ClientOptions client_options;
  client_options.connect_timeout = std::chrono::seconds(2);
  client_options.job_namespace = ranks[0].job_id;
  client_options.job_secret = "";
  EXPECT_THROW(store::Client::connect(server->url(), client_options), Error);
  std::set<std::string> secrets = job_secrets(run, 3);
  ASSERT_EQ(secrets.size(), 1u) << run.out;
  client_options.job_secret = *secrets.begin();
  auto client = store::Client::connect(server->url(), client_options);
  EXPECT_EQ(client->get(ranks[0].job_id + "/counter", std::chrono::milliseconds(0)), "3");
  expect_job_cleaned_up(run, 3);
}

// Every rank of a run gets the same MEMLOOM_JOB_SECRET (it keys the job's store namespace), a
// fresh 128-bit one per run; one the launcher's caller set does not reach the ranks.
TEST(MemloomRun, EveryRankGetsTheSameJobSecretNewPerRun) {
  LauncherRunOptions options;
  options.env["MEMLOOM_JOB_SECRET"] = "from-the-callers-environment";
  const std::string print = "echo \"secret $MEMLOOM_JOB_SECRET\"";
  LauncherRun first = run_memloom_run(sh_job({"-n", "3", "--nodes", "2"}, print), options);
  LauncherRun second = run_memloom_run(sh_job({"-n", "3", "--nodes", "2"}, print), options);
  ASSERT_EQ(first.exit_code, 0) << describe(first);
  ASSERT_EQ(second.exit_code, 0) << describe(second);
  std::set<std::string> first_secrets = job_secrets(first, 3);
  std::set<std::string> second_secrets = job_secrets(second, 3);
  ASSERT_EQ(first_secrets.size(), 1u) << first.out;
  ASSERT_EQ(second_secrets.size(), 1u) << second.out;
  const std::string& secret = *first_secrets.begin();
  EXPECT_EQ(secret.size(), 32u) << secret;  // 128 bits in hex
  EXPECT_EQ(secret.find_first_not_of("0123456789abcdef"), std::string::npos) << secret;
  EXPECT_NE(secret, *second_secrets.begin());
  expect_job_cleaned_up(first, 3);
  expect_job_cleaned_up(second, 3);
}

TEST(MemloomRun, RanksGetInheritedDescriptorsButNotTheLaunchersOwn) {
  // The embedded store's sockets and the other ranks' pipes stay in the launcher; descriptor 41,
  // which memloom-run received from its parent, is passed on.
  LauncherRunOptions options;
  options.inherited_fd = 41;
  LauncherRun run = run_memloom_run(sh_job({"-n", "3"}, "ls -l /proc/$$/fd"), options);
  ASSERT_EQ(run.exit_code, 0) << describe(run);
  for (int rank = 0; rank < 3; ++rank) {
    std::vector<std::string> lines = rank_lines(run.out, rank);
    std::set<std::string> fds;
    for (const std::string& line : lines) {
      size_t arrow = line.find(" -> ");
      if (arrow == std::string::npos) continue;
      fds.insert(
          line.substr(line.rfind(' ', arrow - 1) + 1, arrow - line.rfind(' ', arrow - 1) - 1));
    }
    EXPECT_EQ(fds, (std::set<std::string>{"0", "1", "2", "41"})) << run.out;
  }
  expect_job_cleaned_up(run, 3);
}

TEST(MemloomRun, RemovesTheJobsShmEntriesOnly) {
  const std::string unrelated = "/dev/shm/memloom.unrelated-" + std::to_string(::getpid());
  { std::ofstream(unrelated) << "keep"; }
  LauncherRun run = run_memloom_run(
      sh_job({"-n", "2"}, "touch /dev/shm/memloom.$MEMLOOM_JOB_ID.rank$MEMLOOM_RANK"));
  EXPECT_EQ(run.exit_code, 0) << describe(run);
  EXPECT_NE(run.err.find("removed 2 leftover /dev/shm entries"), std::string::npos) << run.err;
  EXPECT_TRUE(std::filesystem::exists(unrelated));
  std::filesystem::remove(unrelated);
  expect_job_cleaned_up(run, 2);
}

}  // namespace
}  // namespace memloom::sim::testing
