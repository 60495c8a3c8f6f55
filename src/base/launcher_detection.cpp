#include "src/base/launcher_detection.h"

#include <cstdlib>
#include <functional>
#include <mutex>

#include "memloom/error.h"
#include "src/base/log.h"
#include "src/base/tcp_address.h"

namespace memloom::base {
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// -1 when unset; a set variable must be a whole number in [min, max].
int env_number(const char* name, int min, int max) {
  const std::string text = env(name);
  if (text.empty()) return -1;
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || value < min || value > max) {
    raise(Status::kInvalidValue, std::string(name) + "='" + text + "' is not a whole number in " +
                                     std::to_string(min) + ".." + std::to_string(max));
  }
  return static_cast<int>(value);
}

struct Scheme {
  const char* launcher;
  const char* rank;
  const char* world_size;
  const char* local_rank;
  const char* local_world_size;  // nullptr: computed elsewhere
};

constexpr Scheme kSchemes[] = {
    {"memloom", "MEMLOOM_RANK", "MEMLOOM_WORLD_SIZE", "MEMLOOM_LOCAL_RANK", "MEMLOOM_LOCAL_SIZE"},
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr},
};

// The launcher's job id: equal on every rank of a job, different between jobs.
std::string job_id() {
  for (const char* name : {"MEMLOOM_JOB_ID", "SLURM_JOB_ID", "OMPI_MCA_ess_base_jobid",
                           "PMIX_NAMESPACE", "TORCHELASTIC_RUN_ID"}) {
    std::string value = env(name);
    if (name == std::string("SLURM_JOB_ID") && !value.empty()) value += "." + env("SLURM_STEP_ID");
    if (!value.empty()) return value;
  }
  return "";
}

// A port every rank of the job derives alike, below Linux's ephemeral range (32768 and up) so it
// rarely meets a port the kernel handed out.
int port_of_job(const std::string& job) {
  return 20000 + static_cast<int>(std::hash<std::string>{}(job) % 12000);
}

void find_store(LaunchInfo* info) {
  if (std::string url = env("MEMLOOM_STORE_URL"); !url.empty()) {
    info->store_url = url;
    info->store_source = "MEMLOOM_STORE_URL";
    return;
  }
  std::string host, host_source;
  if (std::string master = env("MASTER_ADDR"); !master.empty()) {
    host = master;
    host_source = "MASTER_ADDR";
  } else if (info->launcher == "Slurm") {
    std::string list = env("SLURM_STEP_NODELIST");
    if (list.empty()) list = env("SLURM_JOB_NODELIST");
    host = first_slurm_host(list);
    host_source = "the first host of SLURM_STEP_NODELIST/SLURM_JOB_NODELIST";
  } else if (info->found() && info->world_size > 0 && info->local_world_size == info->world_size) {
    host = "127.0.0.1";
    host_source = "127.0.0.1 (every rank on this host)";
  }
  if (host.empty()) return;
  int port = env_number("MEMLOOM_STORE_PORT", 1, 65535);
  std::string port_source = "MEMLOOM_STORE_PORT";
  if (port < 0) {
    if (int master_port = env_number("MASTER_PORT", 1, 65534); master_port > 0) {
      port = master_port + 1;
      port_source = "MASTER_PORT + 1";
    } else if (std::string job = job_id(); !job.empty()) {
      port = port_of_job(job);
      port_source = "a port derived from the job id";
    } else {
      return;  // nothing every rank could agree on
    }
  }
  info->store_url = format_tcp_url(host, static_cast<uint16_t>(port));
  info->store_source = host_source + ", " + port_source;
  info->rank0_serves_store = true;
}

}  // namespace

std::string LaunchInfo::describe() const {
  std::string out;
  if (!found()) {
    out = "no launcher found (none of MEMLOOM_RANK, RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID set)";
  } else {
    out = "rank " + std::to_string(rank) + " of " + std::to_string(world_size);
    if (local_rank >= 0) {
      out += " (local " + std::to_string(local_rank);
      if (local_world_size > 0) out += " of " + std::to_string(local_world_size);
      out += ")";
    }
    out += " from " + launcher + " (" + rank_variable + ")";
  }
  if (store_url.empty()) return out + "; no config store named";
  return out + "; store " + store_url + " (" + store_source + ")" +
         (rank0_serves_store ? ", served by rank 0" : "");
}

LaunchInfo detect_launch() {
  LaunchInfo info;
  for (const Scheme& scheme : kSchemes) {
    if (env(scheme.rank).empty()) continue;
    info.launcher = scheme.launcher;
    info.rank_variable = scheme.rank;
    info.world_size = env_number(scheme.world_size, 1, 1 << 24);
    if (info.world_size < 0) {
      raise(Status::kInvalidValue, std::string(scheme.rank) + " is set but " + scheme.world_size +
                                       " is not (" + scheme.launcher + " sets both)");
    }
    info.rank = env_number(scheme.rank, 0, info.world_size - 1);
    info.local_rank = env_number(scheme.local_rank, 0, info.world_size - 1);
    if (scheme.local_world_size != nullptr) {
      info.local_world_size = env_number(scheme.local_world_size, 1, info.world_size);
    } else {
      const int node = env_number("SLURM_NODEID", 0, 1 << 24);
      info.local_world_size = slurm_tasks_on_node(env("SLURM_TASKS_PER_NODE"), node);
    }
    break;
  }
  find_store(&info);
  return info;
}

LaunchInfo detect_launch_logged() {
  LaunchInfo info = detect_launch();
  static std::once_flag logged;
  std::call_once(logged, [&info] { MEMLOOM_LOG(kInfo, "launch: " << info.describe()); });
  return info;
}

void log_launch_once() noexcept {
  try {
    detect_launch_logged();
  } catch (const Error& error) {
    MEMLOOM_LOG(kDebug, "launch: " << error.what());
  }
}

std::string first_slurm_host(const std::string& node_list) {
  std::string first = node_list.substr(0, node_list.find(','));
  const size_t open = node_list.find('[');
  if (open == std::string::npos || open > first.size()) return first;
  // A bracket's own commas are not host separators: "node[07-09,12]".
  const std::string prefix = node_list.substr(0, open);
  size_t end = node_list.find_first_of(",-]", open + 1);
  if (end == std::string::npos) return "";
  return prefix + node_list.substr(open + 1, end - open - 1);
}

int slurm_tasks_on_node(const std::string& tasks_per_node, int node) {
  if (tasks_per_node.empty() || node < 0) return -1;
  size_t at = 0;
  int seen = 0;
  while (at < tasks_per_node.size()) {
    char* end = nullptr;
    const long tasks = std::strtol(tasks_per_node.c_str() + at, &end, 10);
    at = static_cast<size_t>(end - tasks_per_node.c_str());
    long repeat = 1;
    if (tasks_per_node.compare(at, 2, "(x") == 0) {
      repeat = std::strtol(tasks_per_node.c_str() + at + 2, &end, 10);
      at = static_cast<size_t>(end - tasks_per_node.c_str()) + 1;  // past ')'
    }
    if (tasks <= 0 || repeat <= 0) return -1;
    if (node < seen + repeat) return static_cast<int>(tasks);
    seen += static_cast<int>(repeat);
    if (at < tasks_per_node.size() && tasks_per_node[at] == ',') ++at;
  }
  return -1;
}

}  // namespace memloom::base
