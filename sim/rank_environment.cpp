#include "sim/rank_environment.h"

#include <sys/random.h>

#include <cerrno>
#include <unordered_map>

#include "memloom/error.h"
#include "src/base/hex.h"

namespace memloom::sim {
namespace {

int node_of(long rank, long world_size, long nodes) {
  return static_cast<int>(rank * nodes / world_size);
}

// The first rank of node k is ceil(k * world_size / nodes): the inverse of node_of.
int first_rank_of(long node, long world_size, long nodes) {
  return static_cast<int>((node * world_size + nodes - 1) / nodes);
}

}  // namespace

RankPlacement place_rank(int rank, int world_size, int nodes, int devices_per_node) {
  MEMLOOM_CHECK_ARG(world_size >= 1, "world size must be at least 1");
  MEMLOOM_CHECK_ARG(rank >= 0 && rank < world_size, "rank out of range");
  MEMLOOM_CHECK_ARG(nodes >= 1 && nodes <= world_size, "node count must be in 1..world size");
  MEMLOOM_CHECK_ARG(devices_per_node >= 1, "devices per node must be at least 1");
  RankPlacement placement;
  placement.rank = rank;
  placement.world_size = world_size;
  placement.node_index = node_of(rank, world_size, nodes);
  int first = first_rank_of(placement.node_index, world_size, nodes);
  int next_first = first_rank_of(placement.node_index + 1L, world_size, nodes);
  placement.local_rank = rank - first;
  placement.local_size = next_first - first;
  placement.device = placement.local_rank % devices_per_node;
  return placement;
}

std::string make_job_secret() {
  unsigned char bytes[16];
  size_t filled = 0;
  while (filled < sizeof(bytes)) {
    ssize_t got = ::getrandom(bytes + filled, sizeof(bytes) - filled, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) raise_errno("getrandom (the job secret)", errno);
    filled += static_cast<size_t>(got);
  }
  return base::hex_bytes(bytes, sizeof(bytes));
}

std::string node_name(const std::string& job_id, int node_index) {
  return job_id + "-node" + std::to_string(node_index);
}

std::vector<std::pair<std::string, std::string>> rank_variables(const RankPlacement& placement,
                                                                const JobIdentity& job) {
  return {
      {"MEMLOOM_RANK", std::to_string(placement.rank)},
      {"MEMLOOM_WORLD_SIZE", std::to_string(placement.world_size)},
      {"MEMLOOM_LOCAL_RANK", std::to_string(placement.local_rank)},
      {"MEMLOOM_LOCAL_SIZE", std::to_string(placement.local_size)},
      {"MEMLOOM_NODE", node_name(job.job_id, placement.node_index)},
      {"MEMLOOM_DEVICE", std::to_string(placement.device)},
      {"MEMLOOM_EMU_DEVICES", std::to_string(job.devices_per_node)},
      {"MEMLOOM_STORE_URL", job.store_url},
      {"MEMLOOM_JOB_ID", job.job_id},
      {"MEMLOOM_JOB_SECRET", job.job_secret},
      {"MEMLOOM_RUNTIME_DIR", job.runtime_dir},
  };
}

std::vector<std::string> merge_environment(
    const std::vector<std::string>& base,
    const std::vector<std::pair<std::string, std::string>>& variables) {
  std::unordered_map<std::string, size_t> replaced;
  for (size_t i = 0; i < variables.size(); ++i) replaced[variables[i].first] = i;
  std::vector<std::string> merged;
  merged.reserve(base.size() + variables.size());
  for (const std::string& entry : base) {
    std::string name = entry.substr(0, entry.find('='));
    if (replaced.count(name) == 0) merged.push_back(entry);
  }
  for (const auto& [name, value] : variables) merged.push_back(name + "=" + value);
  return merged;
}

}  // namespace memloom::sim
