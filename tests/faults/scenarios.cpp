#include "tests/faults/scenarios.h"

namespace memloom::faults {

std::vector<ScenarioEntry> kill_scenarios() {
  std::vector<ScenarioEntry> all;
  for (auto part : {store_and_group_scenarios(), wholememory_scenarios(), shm_scenarios(),
                    bm_scenarios(), trans_scenarios()}) {
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

}  // namespace memloom::faults
