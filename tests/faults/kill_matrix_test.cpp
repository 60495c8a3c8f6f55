// The kill matrix: every blocking call of every API x {victim dies right before the call, victim
// dies while calls are in flight} x {all ranks on one node, victim on another node}. Cells that
// make no sense (a copy into memory mapped on the same node does not involve the victim) are left
// out; scenarios.h says which.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "tests/faults/scenarios.h"

namespace memloom::faults {
namespace {

struct KillCase {
  ScenarioEntry scenario;
  Topology topology;
  std::string topology_name;
  KillPoint when;
};

std::vector<KillCase> all_kill_cases() {
  // Three ranks on one node; four on two nodes with the victim leading the second node.
  const Topology one_node{3, 1, 1};
  const Topology two_nodes{4, 2, 2};
  std::vector<KillCase> cases;
  for (const ScenarioEntry& scenario : kill_scenarios()) {
    for (KillPoint when : {KillPoint::kBeforeCall, KillPoint::kDuringCalls}) {
      if (scenario.one_node) cases.push_back({scenario, one_node, "OneNode", when});
      if (scenario.two_nodes) cases.push_back({scenario, two_nodes, "TwoNodes", when});
    }
  }
  return cases;
}

// gtest prints a parameter that fails; the name says it all.
void PrintTo(const KillCase& kill_case, std::ostream* out) {
  *out << kill_case.scenario.name << "/" << kill_case.topology_name;
}

class KillMatrix : public ::testing::TestWithParam<KillCase> {};

TEST_P(KillMatrix, SurvivorsFailWithinTheDeadlineAndShutDownCleanly) {
  run_kill_case(GetParam().scenario.factory, GetParam().topology, GetParam().when);
}

INSTANTIATE_TEST_SUITE_P(EveryBlockingCall, KillMatrix, ::testing::ValuesIn(all_kill_cases()),
                         [](const ::testing::TestParamInfo<KillCase>& info) {
                           return info.param.scenario.name + "_" + info.param.topology_name +
                                  (info.param.when == KillPoint::kBeforeCall ? "_KilledBefore"
                                                                             : "_KilledDuring");
                         });

}  // namespace
}  // namespace memloom::faults
