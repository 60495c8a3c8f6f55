#include "sim/rank_environment.h"

#include <gtest/gtest.h>

#include <map>

#include "memloom/error.h"

namespace memloom::sim {
namespace {

TEST(RankPlacement, FourRanksOnTwoNodesInBlocks) {
  const int expected_node[] = {0, 0, 1, 1};
  const int expected_local[] = {0, 1, 0, 1};
  for (int rank = 0; rank < 4; ++rank) {
    RankPlacement p = place_rank(rank, 4, 2, 8);
    EXPECT_EQ(p.rank, rank);
    EXPECT_EQ(p.world_size, 4);
    EXPECT_EQ(p.node_index, expected_node[rank]) << rank;
    EXPECT_EQ(p.local_rank, expected_local[rank]) << rank;
    EXPECT_EQ(p.local_size, 2);
    EXPECT_EQ(p.device, expected_local[rank]);
  }
}

TEST(RankPlacement, UnevenBlocksAndDeviceModulo) {
  // 5 ranks on 2 nodes: node 0 holds ranks 0-2, node 1 ranks 3-4.
  const int expected_node[] = {0, 0, 0, 1, 1};
  const int expected_local[] = {0, 1, 2, 0, 1};
  const int expected_size[] = {3, 3, 3, 2, 2};
  for (int rank = 0; rank < 5; ++rank) {
    RankPlacement p = place_rank(rank, 5, 2, 2);
    EXPECT_EQ(p.node_index, expected_node[rank]) << rank;
    EXPECT_EQ(p.local_rank, expected_local[rank]) << rank;
    EXPECT_EQ(p.local_size, expected_size[rank]) << rank;
    EXPECT_EQ(p.device, expected_local[rank] % 2) << rank;
  }
}

TEST(RankPlacement, EveryNodeGetsAContiguousNonEmptyBlock) {
  for (int world = 1; world <= 40; ++world) {
    for (int nodes = 1; nodes <= world; ++nodes) {
      std::map<int, int> count;
      int previous_node = 0;
      for (int rank = 0; rank < world; ++rank) {
        RankPlacement p = place_rank(rank, world, nodes, 8);
        ASSERT_GE(p.node_index, previous_node);  // contiguous: never goes back
        ASSERT_LE(p.node_index, previous_node + 1);
        previous_node = p.node_index;
        ASSERT_EQ(p.local_rank, count[p.node_index]) << world << "/" << nodes << " r" << rank;
        ++count[p.node_index];
      }
      ASSERT_EQ(static_cast<int>(count.size()), nodes);
      for (int rank = 0; rank < world; ++rank) {
        RankPlacement p = place_rank(rank, world, nodes, 8);
        ASSERT_EQ(p.local_size, count[p.node_index]);
      }
    }
  }
}

TEST(RankPlacement, RejectsImpossibleLayouts) {
  EXPECT_THROW(place_rank(4, 4, 2, 8), Error);
  EXPECT_THROW(place_rank(-1, 4, 2, 8), Error);
  EXPECT_THROW(place_rank(0, 4, 5, 8), Error);
  EXPECT_THROW(place_rank(0, 4, 0, 8), Error);
  EXPECT_THROW(place_rank(0, 4, 2, 0), Error);
}

TEST(RankEnvironment, VariablesOfOneRank) {
  JobIdentity job{"jabc", "tcp://127.0.0.1:9", "/tmp/memloom-jabc", 4,
                  "00112233445566778899aabbccddeeff"};
  auto variables = rank_variables(place_rank(3, 4, 2, 4), job);
  std::map<std::string, std::string> map(variables.begin(), variables.end());
  EXPECT_EQ(map.size(), variables.size());
  EXPECT_EQ(map["MEMLOOM_RANK"], "3");
  EXPECT_EQ(map["MEMLOOM_WORLD_SIZE"], "4");
  EXPECT_EQ(map["MEMLOOM_LOCAL_RANK"], "1");
  EXPECT_EQ(map["MEMLOOM_LOCAL_SIZE"], "2");
  EXPECT_EQ(map["MEMLOOM_NODE"], "jabc-node1");
  EXPECT_EQ(map["MEMLOOM_DEVICE"], "1");
  EXPECT_EQ(map["MEMLOOM_EMU_DEVICES"], "4");
  EXPECT_EQ(map["MEMLOOM_STORE_URL"], "tcp://127.0.0.1:9");
  EXPECT_EQ(map["MEMLOOM_JOB_ID"], "jabc");
  EXPECT_EQ(map["MEMLOOM_RUNTIME_DIR"], "/tmp/memloom-jabc");
  EXPECT_EQ(map["MEMLOOM_JOB_SECRET"], "00112233445566778899aabbccddeeff");
}

TEST(RankEnvironment, MergeReplacesAndAppends) {
  auto merged = merge_environment({"PATH=/bin", "MEMLOOM_RANK=7", "EMPTY=", "NOVALUE"},
                                  {{"MEMLOOM_RANK", "1"}, {"MEMLOOM_NODE", "n"}});
  EXPECT_EQ(merged, (std::vector<std::string>{"PATH=/bin", "EMPTY=", "NOVALUE", "MEMLOOM_RANK=1",
                                              "MEMLOOM_NODE=n"}));
}

}  // namespace
}  // namespace memloom::sim
