// Where each rank sits in the emulated cluster (node, local rank, device) and the environment
// variables that tell it so. Ranks are dealt to nodes in contiguous blocks, the same rule as
// tests/support/multi_process.h, so a job looks the same under either launcher.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace memloom::sim {

struct RankPlacement {
  int rank = 0;
  int world_size = 1;
  int node_index = 0;
  int local_rank = 0;
  int local_size = 1;
  int device = 0;
};

// rank r goes to node floor(r * nodes / world_size); requires 1 <= nodes <= world_size.
RankPlacement place_rank(int rank, int world_size, int nodes, int devices_per_node);

// What every rank of one job shares.
struct JobIdentity {
  std::string job_id;
  std::string store_url;
  std::string runtime_dir;
  int devices_per_node = 8;
  // 128 random bits in hex, new per job: keys the job's store namespace (MEMLOOM_JOB_SECRET), so
  // another local user who learns the job id still cannot join it.
  std::string job_secret;
};

// 128 bits from the kernel's CSPRNG (getrandom), as 32 lowercase hex digits.
std::string make_job_secret();

// "<job id>-node<k>": unique per job so two jobs on one machine never share an emulated node.
std::string node_name(const std::string& job_id, int node_index);

// The MEMLOOM_* variables of one rank, in a fixed order.
std::vector<std::pair<std::string, std::string>> rank_variables(const RankPlacement& placement,
                                                                const JobIdentity& job);

// `base` ("NAME=value" entries, e.g. from environ) with `variables` replacing any entries of
// the same name and appended otherwise.
std::vector<std::string> merge_environment(
    const std::vector<std::string>& base,
    const std::vector<std::pair<std::string, std::string>>& variables);

}  // namespace memloom::sim
