// The blocking calls of every API, each as a Scenario for the kill matrix (fault_harness.h).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "memloom/error.h"
#include "tests/faults/fault_harness.h"

namespace memloom::faults {

struct ScenarioEntry {
  std::string name;  // "<api><Call>", a gtest name part
  ScenarioFactory factory;
  bool one_node = true;   // meaningful with every rank on one node
  bool two_nodes = true;  // meaningful with the victim on another node
};

// Every scenario of every API, in a fixed order.
std::vector<ScenarioEntry> kill_scenarios();

// Per API (scenarios_<api>.cpp).
std::vector<ScenarioEntry> store_and_group_scenarios();
std::vector<ScenarioEntry> wholememory_scenarios();
std::vector<ScenarioEntry> shm_scenarios();
std::vector<ScenarioEntry> bm_scenarios();
std::vector<ScenarioEntry> trans_scenarios();

// Helpers shared by the scenarios: a value every rank can read, published through the job's
// config store (outside the API under test).
void publish(const std::string& store_url, const std::string& key, const std::string& value);
std::string await(const std::string& store_url, const std::string& key);

// A TRANS uniqueId: "127.0.0.1:<a port that was free a moment ago>".
std::string free_loopback_id();

// The C++ core's errors as a CallResult (code = the Status).
template <typename Body>
CallResult core_call(Body&& body) {
  try {
    body();
    return {};
  } catch (const Error& error) {
    return {static_cast<int>(error.status()), error.what()};
  }
}

inline bool is_core_peer_failure(int code) {
  return code == static_cast<int>(Status::kCommunication) ||
         code == static_cast<int>(Status::kTimeout);
}

}  // namespace memloom::faults
