#include "sim/launch_options.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "memloom/error.h"
#include "tests/support/scoped_env.h"

namespace memloom::sim {
namespace {

using Args = std::vector<std::string>;

using memloom::test::ScopedEnv;

std::string parse_error(const Args& args) {
  try {
    parse_launch_options(args);
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::kInvalidInput);
    return error.what();
  }
  ADD_FAILURE() << "no error for these arguments";
  return "";
}

// On GPUs the ranks' devices are real: a node defaults to the GPUs visible, not to 8.
TEST(LaunchOptions, TheCudaBackendDefaultsToTheVisibleGpus) {
  ScopedEnv backend("MEMLOOM_BACKEND", "cuda");
  {
    ScopedEnv visible("CUDA_VISIBLE_DEVICES", "0,1,3");
    EXPECT_EQ(parse_launch_options({"-n", "2", "--", "prog"}).devices_per_node, 3);
    EXPECT_EQ(
        parse_launch_options({"-n", "2", "--devices-per-node", "5", "--", "prog"}).devices_per_node,
        5);
  }
  ScopedEnv emulated("MEMLOOM_BACKEND", "emulated");
  EXPECT_EQ(parse_launch_options({"-n", "2", "--", "prog"}).devices_per_node, 8);
}

TEST(LaunchOptions, Defaults) {
  ScopedEnv backend("MEMLOOM_BACKEND", std::nullopt);
  LaunchOptions options = parse_launch_options({"-n", "2", "--", "prog", "-x", "--y"});
  EXPECT_EQ(options.ranks, 2);
  EXPECT_EQ(options.nodes, 1);
  EXPECT_EQ(options.devices_per_node, 8);
  EXPECT_TRUE(options.store_url.empty());
  EXPECT_FALSE(options.timeout_seconds.has_value());
  EXPECT_DOUBLE_EQ(options.grace_seconds, 3.0);
  EXPECT_TRUE(options.kills.empty());
  EXPECT_TRUE(options.tag_output);
  EXPECT_FALSE(options.show_help);
  EXPECT_EQ(options.command, (Args{"prog", "-x", "--y"}));
}

TEST(LaunchOptions, EveryOptionInBothSpellings) {
  LaunchOptions options = parse_launch_options(
      {"-n4", "--nodes=2", "--devices-per-node", "3", "--store", "tcp://10.0.0.1:5000",
       "--timeout=1.5", "--grace", "0", "--kill-rank", "1", "--kill-after", "0.25", "--kill-rank=3",
       "--kill-after=2", "--no-tag-output", "--", "prog"});
  EXPECT_EQ(options.ranks, 4);
  EXPECT_EQ(options.nodes, 2);
  EXPECT_EQ(options.devices_per_node, 3);
  EXPECT_EQ(options.store_url, "tcp://10.0.0.1:5000");
  ASSERT_TRUE(options.timeout_seconds.has_value());
  EXPECT_DOUBLE_EQ(*options.timeout_seconds, 1.5);
  EXPECT_DOUBLE_EQ(options.grace_seconds, 0.0);
  ASSERT_EQ(options.kills.size(), 2u);
  EXPECT_EQ(options.kills[0].rank, 1);
  EXPECT_DOUBLE_EQ(options.kills[0].after_seconds, 0.25);
  EXPECT_EQ(options.kills[1].rank, 3);
  EXPECT_DOUBLE_EQ(options.kills[1].after_seconds, 2.0);
  EXPECT_FALSE(options.tag_output);
  EXPECT_EQ(options.command, Args{"prog"});
}

TEST(LaunchOptions, CommandWithoutDoubleDashStartsAtFirstWord) {
  LaunchOptions options = parse_launch_options({"-n", "1", "prog", "-n", "5"});
  EXPECT_EQ(options.ranks, 1);
  EXPECT_EQ(options.command, (Args{"prog", "-n", "5"}));
}

TEST(LaunchOptions, HelpNeedsNothingElse) {
  EXPECT_TRUE(parse_launch_options({"--help"}).show_help);
  EXPECT_TRUE(parse_launch_options({"-n", "2", "-h"}).show_help);
  EXPECT_TRUE(parse_launch_options({"-h", "--bogus"}).show_help);
}

TEST(LaunchOptions, RejectsBadValuesWithClearMessages) {
  EXPECT_NE(parse_error({}).find("-n N"), std::string::npos);
  EXPECT_NE(parse_error({"-n", "2"}).find("no program"), std::string::npos);
  EXPECT_NE(parse_error({"-n", "0", "--", "p"}).find("between 1 and"), std::string::npos);
  EXPECT_NE(parse_error({"-n", "two", "--", "p"}).find("'two'"), std::string::npos);
  EXPECT_NE(parse_error({"-n", "2x", "--", "p"}).find("'2x'"), std::string::npos);
  EXPECT_NE(parse_error({"-n"}).find("needs a value"), std::string::npos);
  EXPECT_NE(parse_error({"--bogus", "-n", "1", "--", "p"}).find("unknown option '--bogus'"),
            std::string::npos);
  EXPECT_NE(parse_error({"-nodes", "2", "--", "p"}).find("unknown option"), std::string::npos);
  EXPECT_NE(parse_error({"-n", "2", "--nodes", "3", "--", "p"}).find("exceeds"), std::string::npos);
  EXPECT_NE(parse_error({"-n", "2", "--devices-per-node", "0", "--", "p"}).find("between"),
            std::string::npos);
  EXPECT_NE(parse_error({"-n", "2", "--timeout", "0", "--", "p"}).find("greater than 0"),
            std::string::npos);
  EXPECT_NE(parse_error({"-n", "2", "--timeout", "nan", "--", "p"}).find("seconds"),
            std::string::npos);
  EXPECT_NE(parse_error({"-n", "2", "--grace", "-1", "--", "p"}).find("at least 0"),
            std::string::npos);
  EXPECT_NE(parse_error({"-n", "2", "--kill-rank", "1", "--", "p"}).find("--kill-after"),
            std::string::npos);
  EXPECT_NE(parse_error({"-n", "2", "--kill-after", "1", "--", "p"}).find("--kill-rank"),
            std::string::npos);
  EXPECT_NE(parse_error({"-n", "2", "--kill-rank", "2", "--kill-after", "1", "--", "p"})
                .find("not a rank"),
            std::string::npos);
  EXPECT_NE(parse_error({"-n", "2", "--tag-output=yes", "--", "p"}).find("takes no value"),
            std::string::npos);
  EXPECT_NE(parse_error({"-n", "2", "--store", "localhost:1", "--", "p"}).find("tcp://"),
            std::string::npos);
}

TEST(LaunchOptions, StoreUrls) {
  EXPECT_TRUE(is_valid_store_url("tcp://127.0.0.1:1"));
  EXPECT_TRUE(is_valid_store_url("tcp://localhost:65535"));
  EXPECT_FALSE(is_valid_store_url("tcp://no-such-host.invalid:4000"));
  EXPECT_TRUE(is_valid_store_url("tcp://[::1]:4000"));
  EXPECT_FALSE(is_valid_store_url("tcp://127.0.0.1"));
  EXPECT_FALSE(is_valid_store_url("tcp://127.0.0.1:0"));
  EXPECT_FALSE(is_valid_store_url("tcp://127.0.0.1:65536"));
  EXPECT_FALSE(is_valid_store_url("tcp://:80"));
  EXPECT_FALSE(is_valid_store_url("tcp://::1:80"));
  EXPECT_FALSE(is_valid_store_url("tcp://[]:80"));
  EXPECT_FALSE(is_valid_store_url("tcp://[::1]80"));
  EXPECT_FALSE(is_valid_store_url("udp://127.0.0.1:80"));
  EXPECT_FALSE(is_valid_store_url("tcp://host:80/path"));
}

TEST(LaunchOptions, UsageDocumentsOptionsVariablesAndExitCodes) {
  std::string usage = launch_usage();
  for (const char* word : {"-n N",
                           "--nodes",
                           "--devices-per-node",
                           "--store",
                           "--timeout",
                           "--grace",
                           "--kill-rank",
                           "--kill-after",
                           "--tag-output",
                           "--no-tag-output",
                           "--help",
                           "MEMLOOM_RANK",
                           "MEMLOOM_WORLD_SIZE",
                           "MEMLOOM_LOCAL_RANK",
                           "MEMLOOM_LOCAL_SIZE",
                           "MEMLOOM_NODE",
                           "MEMLOOM_DEVICE",
                           "MEMLOOM_EMU_DEVICES",
                           "MEMLOOM_STORE_URL",
                           "MEMLOOM_JOB_ID",
                           "MEMLOOM_RUNTIME_DIR",
                           "Exit status",
                           "124",
                           "125",
                           "127",
                           "128+S"}) {
    EXPECT_NE(usage.find(word), std::string::npos) << word;
  }
}

}  // namespace
}  // namespace memloom::sim
