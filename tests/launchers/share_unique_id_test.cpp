// memloom/launch.h under a launcher other than memloom-run: ranks forked with torchrun's variables
// (and none of memloom-run's) find their rank, and rank 0's WholeMemory unique id reaches every
// rank through the store rank 0 serves at MASTER_ADDR, port MASTER_PORT + 1.
#include "memloom/launch.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "src/base/log.h"
#include "tests/support/multi_process.h"
#include "tests/support/scoped_env.h"

namespace {

using memloom::testing::MultiProcessOptions;
using memloom::testing::RankContext;
using memloom::testing::run_ranks;

// A port that is free with the one after it (the store's: MASTER_PORT + 1), from below the
// kernel's ephemeral range (32768 up): a port from bind(0) is odd there, and the even port after
// it is what outgoing connections of parallel tests take (examples/python/launch_ports.py).
int free_port_pair() {
  auto bindable = [](int port) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<uint16_t>(port));
    const bool free =
        fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
    if (fd >= 0) ::close(fd);
    return free;
  };
  std::random_device seed;
  std::mt19937 chooser(seed());
  std::uniform_int_distribution<int> below_ephemeral(10000, 32700);
  for (int attempt = 0; attempt < 500; ++attempt) {
    const int port = below_ephemeral(chooser);
    if (bindable(port) && bindable(port + 1)) return port;
  }
  ADD_FAILURE() << "no two consecutive free loopback ports in 10000..32701";
  return 29500;
}

void become_torchrun_rank(const RankContext& context, int master_port) {
  for (const char* name : {"MEMLOOM_RANK", "MEMLOOM_WORLD_SIZE", "MEMLOOM_LOCAL_RANK",
                           "MEMLOOM_LOCAL_SIZE", "MEMLOOM_STORE_URL", "MEMLOOM_STORE_PORT"}) {
    ::unsetenv(name);
  }
  ::setenv("RANK", std::to_string(context.rank).c_str(), 1);
  ::setenv("WORLD_SIZE", std::to_string(context.world_size).c_str(), 1);
  ::setenv("LOCAL_RANK", std::to_string(context.rank).c_str(), 1);
  ::setenv("LOCAL_WORLD_SIZE", std::to_string(context.world_size).c_str(), 1);
  ::setenv("MASTER_ADDR", "localhost", 1);  // a host name, as users write it
  ::setenv("MASTER_PORT", std::to_string(master_port).c_str(), 1);
}

TEST(ShareUniqueId, EveryRankGetsRankZerosIdUnderTorchrunVariables) {
  MultiProcessOptions options;
  options.ranks = 3;
  options.start_store = false;
  const int master_port = free_port_pair();
  auto results = run_ranks(options, [&](const RankContext& context) {
    become_torchrun_rank(context, master_port);
    memloom_launch_info_t info;
    ASSERT_EQ(memloom_get_launch_info(&info), MEMLOOM_STATUS_SUCCESS);
    EXPECT_STREQ(info.launcher, "torchrun");
    EXPECT_STREQ(info.rank_variable, "RANK");
    EXPECT_EQ(info.rank, context.rank);
    EXPECT_EQ(info.world_size, 3);
    EXPECT_EQ(info.rank0_serves_store, 1);
    // Without MEMLOOM_DEVICE (memloom-run's), each local rank gets its own device.
    if (std::getenv("MEMLOOM_DEVICE") == nullptr) {
      EXPECT_EQ(info.device, context.rank);
    }
    EXPECT_EQ(std::string(info.store_url), "tcp://localhost:" + std::to_string(master_port + 1));
    ASSERT_EQ(wholememory_init(0, LEVEL_WARN), WHOLEMEMORY_SUCCESS);
    wholememory_unique_id_t id;
    ASSERT_EQ(memloom_wholememory_share_unique_id(&id, info.rank, info.world_size),
              WHOLEMEMORY_SUCCESS);
    wholememory_comm_t comm = nullptr;
    ASSERT_EQ(wholememory_create_communicator(&comm, id, info.rank, info.world_size),
              WHOLEMEMORY_SUCCESS);
    int size = 0;
    EXPECT_EQ(wholememory_communicator_get_size(&size, comm), WHOLEMEMORY_SUCCESS);
    EXPECT_EQ(size, 3);
    // A second id of the same job is a new one, shared alike.
    wholememory_unique_id_t second;
    ASSERT_EQ(memloom_wholememory_share_unique_id(&second, info.rank, info.world_size),
              WHOLEMEMORY_SUCCESS);
    EXPECT_NE(std::memcmp(&id, &second, sizeof(id)), 0);
    EXPECT_EQ(wholememory_communicator_barrier(comm), WHOLEMEMORY_SUCCESS);
    EXPECT_EQ(wholememory_destroy_communicator(comm), WHOLEMEMORY_SUCCESS);
    EXPECT_EQ(wholememory_finalize(), WHOLEMEMORY_SUCCESS);
  });
  EXPECT_ALL_RANKS_PASS(results);
}

TEST(ShareUniqueId, WithoutAStoreTheErrorSaysWhatToSet) {
  memloom::test::ScopedEnv env({{"MEMLOOM_RANK", std::nullopt},
                                {"MEMLOOM_WORLD_SIZE", std::nullopt},
                                {"MEMLOOM_STORE_URL", std::nullopt},
                                {"MEMLOOM_STORE_PORT", std::nullopt},
                                {"MASTER_ADDR", std::nullopt},
                                {"MASTER_PORT", std::nullopt},
                                {"LOCAL_WORLD_SIZE", std::nullopt},
                                {"RANK", "1"},
                                {"WORLD_SIZE", "2"}});
  ASSERT_EQ(wholememory_init(0, LEVEL_WARN), WHOLEMEMORY_SUCCESS);
  memloom::log::take_last_error();
  wholememory_unique_id_t id;
  EXPECT_EQ(memloom_wholememory_share_unique_id(&id, 1, 2), WHOLEMEMORY_INVALID_VALUE);
  const std::string message = memloom::log::take_last_error();
  EXPECT_NE(message.find("no config store to share the unique id through"), std::string::npos)
      << message;
  EXPECT_NE(message.find("set MEMLOOM_STORE_URL, or MASTER_ADDR and MASTER_PORT"),
            std::string::npos)
      << message;
  EXPECT_EQ(wholememory_finalize(), WHOLEMEMORY_SUCCESS);
}

}  // namespace
