// memloom-info: what memloom would do in this environment, like ucx_info or fi_info. The
// version and build options, the backend it would choose and why (the real loader or driver
// error when CUDA is skipped), its devices and how they reach each other (the peer access matrix
// of CUDA GPUs), the transport across nodes and what UCX offers (RDMA, CUDA memory), the launcher
// variables found and the rank they give, the config store, and every MEMLOOM_* setting with its
// value in effect and its default; which path moves the bytes to each kind of peer for each API
// and memory kind (tools/memloom_info_paths.h), and where the launcher's layout tells, which kind
// of peer each other rank is.
//   memloom-info [--json] [--version]
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "memloom/error.h"
#include "src/base/launcher_detection.h"
#include "src/base/settings_table.h"
#include "src/base/version.h"
#include "src/core/backend_choice.h"
#include "src/core/platform_loader.h"
#include "tools/memloom_info_paths.h"

namespace {

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string gib(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
  return text;
}

// One row per device, one entry per peer; the diagonal (a device and itself) stays empty.
using PeerMatrix = std::vector<std::vector<std::optional<memloom::hal::PeerAccess>>>;

struct Report {
  std::string backend, backend_reason, backend_error;
  int devices = 0;
  std::vector<size_t> capacities;
  // Empty when the backend's devices have no peer links of their own (no CUDA devices).
  PeerMatrix peers;
  std::string peers_error;
  std::optional<memloom::hal::TransportSupport> transport;  // empty without a backend
  memloom::base::LaunchInfo launch;
  std::string launch_error;
  memloom::tools::PathFacts path_facts;  // meaningful with a backend only
};

// Asks the backend how each device reaches every other; empty when it has no peer links to report.
PeerMatrix peer_matrix(memloom::hal::Platform& platform, int devices, std::string* error) {
  PeerMatrix matrix;
  if (!platform.capabilities().peer_links) return matrix;
  try {
    for (int from = 0; from < devices; ++from) {
      matrix.emplace_back(devices);
      for (int to = 0; to < devices; ++to) {
        if (from == to) continue;
        matrix[from][to] = platform.peer_access(from, to);
        if (!matrix[from][to]) {
          *error = "the backend reported no peer access from device " + std::to_string(from) +
                   " to " + std::to_string(to);
          return {};
        }
      }
    }
  } catch (const memloom::Error& failure) {
    *error = failure.what();
    return {};
  }
  return matrix;
}

std::string peer_entry(const std::optional<memloom::hal::PeerAccess>& access, bool self) {
  if (self) return "self";
  if (!access->accessible) return "-";
  return "P2P r" + std::to_string(access->performance_rank) +
         (access->native_atomics ? " atomics" : "");
}

void print_peer_matrix(const Report& r) {
  if (!r.peers_error.empty()) {
    std::printf("peer access: error: %s\n", r.peers_error.c_str());
    return;
  }
  if (r.peers.empty()) {
    std::printf("peer access: no CUDA devices (%s devices have no peer links)\n",
                r.backend.c_str());
    return;
  }
  std::printf(
      "peer access (row: from, column: to; P2P rN: peer access, link rank N (0: best), atomics: "
      "native atomics; -: none):\n%-8s",
      "");
  const size_t n = r.peers.size();
  for (size_t to = 0; to < n; ++to) std::printf("  %-14s", ("GPU" + std::to_string(to)).c_str());
  std::printf("\n");
  for (size_t from = 0; from < n; ++from) {
    std::printf("  %-6s", ("GPU" + std::to_string(from)).c_str());
    for (size_t to = 0; to < n; ++to) {
      std::printf("  %-14s", peer_entry(r.peers[from][to], from == to).c_str());
    }
    std::printf("\n");
  }
}

std::string peer_matrix_json(const Report& r) {
  if (r.peers.empty()) return "null";
  std::string out = "[";
  for (size_t from = 0; from < r.peers.size(); ++from) {
    out += from ? ",\n    [" : "\n    [";
    for (size_t to = 0; to < r.peers.size(); ++to) {
      if (to) out += ", ";
      const auto& access = r.peers[from][to];
      if (from == to) {
        out += "\"self\"";
      } else {
        out += std::string("{\"accessible\": ") + (access->accessible ? "true" : "false") +
               ", \"performance_rank\": " + std::to_string(access->performance_rank) +
               ", \"native_atomics\": " + (access->native_atomics ? "true" : "false") + "}";
      }
    }
    out += "]";
  }
  return out + "\n  ]";
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : " ") + item;
  return out.empty() ? "(none)" : out;
}

void print_transport(const memloom::hal::TransportSupport& t) {
  std::printf("transport: ucx %s; RDMA transport: %s; CUDA memory: %s; data path: %s\n",
              t.ucx_version.c_str(), t.ucx_rdma ? "yes" : "no (no rc, dc or ud resource)",
              t.ucx_cuda_memory ? "yes" : "no", t.ucx_data_path.c_str());
  if (!t.ucx_error.empty()) {
    std::printf("ucx resources: error: %s\n", t.ucx_error.c_str());
  } else {
    std::printf("ucx resources: %s\n", joined(t.ucx_resources).c_str());
  }
}

std::string transport_json(const std::optional<memloom::hal::TransportSupport>& transport) {
  if (!transport) return "null";
  const auto& t = *transport;
  std::string resources = "[";
  for (size_t i = 0; i < t.ucx_resources.size(); ++i)
    resources += (i ? ", " : "") + json_string(t.ucx_resources[i]);
  resources += "]";
  return "{\"ucx\": {\"version\": " + json_string(t.ucx_version) +
         ", \"rdma\": " + (t.ucx_rdma ? "true" : "false") +
         ", \"cuda_memory\": " + (t.ucx_cuda_memory ? "true" : "false") +
         ", \"data_path\": " + json_string(t.ucx_data_path) + ", \"resources\": " + resources +
         ", \"error\": " + json_string(t.ucx_error) + "}}";
}

// This machine's facts for the path rules: the transport and UCX as the backend reports them,
// Yama's ptrace scope (cross-memory attach), MEMLOOM_TRANS_STAGING, and the CUDA pairs without peer
// access.
memloom::tools::PathFacts path_facts(const Report& r) {
  memloom::tools::PathFacts facts;
  facts.backend = r.backend;
  facts.ucx_rdma = r.transport->ucx_rdma;
  facts.ucx_cuda_memory = r.transport->ucx_cuda_memory;
  facts.ptrace_scope = memloom::tools::read_ptrace_scope();
  const char* staging = std::getenv("MEMLOOM_TRANS_STAGING");
  facts.trans_staging_forced = staging != nullptr && std::string(staging) == "1";
  facts.gpus = r.peers.empty() ? 0 : static_cast<int>(r.peers.size());
  for (size_t from = 0; from < r.peers.size(); ++from) {
    for (size_t to = 0; to < r.peers.size(); ++to) {
      if (from != to && !r.peers[from][to]->accessible)
        facts.pairs_without_peer_access.emplace_back(static_cast<int>(from), static_cast<int>(to));
    }
  }
  return facts;
}

std::string ptrace_text(int scope) {
  return scope < 0 ? "absent" : std::to_string(scope);
}

void print_paths(const Report& r) {
  using memloom::tools::peer_place_text;
  const auto& f = r.path_facts;
  std::printf("paths (%s backend, ptrace_scope %s; the path each kind of peer's bytes take):\n",
              f.backend.c_str(), ptrace_text(f.ptrace_scope).c_str());
  for (const auto& row : memloom::tools::path_table(f)) {
    std::printf("  %s\n", row.title.c_str());
    for (const auto& entry : row.entries) {
      std::printf("    %-13s %s: %s\n", peer_place_text(entry.place), entry.path.c_str(),
                  entry.how.c_str());
    }
  }
  if (!r.launch_error.empty()) return;
  const memloom::tools::JobLayout layout = memloom::tools::job_layout(r.launch);
  if (!r.launch.found()) {
    std::printf("ranks: %s\n", layout.why.c_str());
    return;
  }
  std::printf("ranks (seen from rank %d): %s\n", r.launch.rank, layout.why.c_str());
  for (const auto& other : layout.ranks)
    std::printf("  rank %-5d %s\n", other.rank, peer_place_text(other.place));
}

std::string paths_json(const Report& r) {
  if (!r.backend_error.empty()) return "null";
  const auto& f = r.path_facts;
  std::string out = "{\"backend\": " + json_string(f.backend) +
                    ", \"ptrace_scope\": " + std::to_string(f.ptrace_scope) +
                    ", \"trans_staging_forced\": " + (f.trans_staging_forced ? "true" : "false") +
                    ", \"gpu_pairs_without_peer_access\": [";
  for (size_t i = 0; i < f.pairs_without_peer_access.size(); ++i) {
    out += (i ? ", [" : "[") + std::to_string(f.pairs_without_peer_access[i].first) + ", " +
           std::to_string(f.pairs_without_peer_access[i].second) + "]";
  }
  out += "],\n    \"table\": [";
  bool first_row = true;
  for (const auto& row : memloom::tools::path_table(f)) {
    out += std::string(first_row ? "" : ",") + "\n      {\"memory\": " + json_string(row.memory) +
           ", \"title\": " + json_string(row.title);
    first_row = false;
    for (const auto& entry : row.entries) {
      out += std::string(", \"") + memloom::tools::peer_place_key(entry.place) +
             "\": {\"path\": " + json_string(entry.path) + ", \"how\": " + json_string(entry.how) +
             "}";
    }
    out += "}";
  }
  out += "\n    ],\n    \"ranks\": ";
  if (!r.launch_error.empty()) return out + "null}";
  const memloom::tools::JobLayout layout = memloom::tools::job_layout(r.launch);
  out += std::string("{\"known\": ") + (layout.known ? "true" : "false") +
         ", \"why\": " + json_string(layout.why) + ", \"peers\": [";
  for (size_t i = 0; i < layout.ranks.size(); ++i) {
    out += std::string(i ? ", " : "") + "{\"rank\": " + std::to_string(layout.ranks[i].rank) +
           ", \"place\": \"" + memloom::tools::peer_place_key(layout.ranks[i].place) + "\"}";
  }
  return out + "]}}";
}

Report gather() {
  Report report;
  try {
    memloom::hal::Platform& platform = memloom::core::platform();
    report.backend = platform.name();
    report.devices = platform.device_count();
    for (int d = 0; d < report.devices; ++d)
      report.capacities.push_back(platform.device_capacity(d));
    report.peers = peer_matrix(platform, report.devices, &report.peers_error);
    report.transport = platform.transport_support();
    report.path_facts = path_facts(report);
  } catch (const memloom::Error& error) {
    report.backend_error = error.what();
  }
  report.backend_reason = memloom::core::backend_choice_reason();
  try {
    report.launch = memloom::base::detect_launch();
  } catch (const memloom::Error& error) {
    report.launch_error = error.what();
  }
  return report;
}

void print_text(const Report& r) {
  std::printf("%s\n", memloom::base::version_line("memloom").c_str());
  if (r.backend_error.empty()) {
    std::printf("backend:  %s (%s)\n", r.backend.c_str(), r.backend_reason.c_str());
    std::printf("devices:  %d %s", r.devices, r.backend.c_str());
    if (!r.capacities.empty()) {
      bool same = true;
      for (size_t c : r.capacities) same = same && c == r.capacities[0];
      if (same) {
        std::printf(", %s each", gib(r.capacities[0]).c_str());
      } else {
        for (size_t d = 0; d < r.capacities.size(); ++d)
          std::printf("%s %zu: %s", d == 0 ? ":" : ",", d, gib(r.capacities[d]).c_str());
      }
    }
    std::printf("\n");
    print_peer_matrix(r);
    print_transport(*r.transport);
  } else {
    std::printf("backend:  none: %s\n", r.backend_error.c_str());
  }
  if (!r.launch_error.empty()) {
    std::printf("launcher: error: %s\n", r.launch_error.c_str());
  } else {
    std::printf("launcher: %s\n", r.launch.describe().c_str());
  }
  std::printf("store:    %s\n", r.launch.store_url.empty() ? "(none named: rank 0 of a WholeMemory "
                                                             "job embeds one on a free port)"
                                                           : r.launch.store_url.c_str());
  if (r.backend_error.empty()) print_paths(r);
  std::printf("settings (value in effect, default):\n");
  for (const auto& setting : memloom::base::memloom_settings()) {
    const char* value = std::getenv(setting.name);
    std::printf("  %-30s %-20s %s\n", setting.name, value == nullptr ? "(unset)" : value,
                setting.default_value);
  }
}

void print_json(const Report& r) {
  std::printf("{\n  \"version\": %s,\n  \"build\": %s,\n",
              json_string(memloom::base::version()).c_str(),
              json_string(memloom::base::build_options()).c_str());
  std::printf("  \"backend\": %s,\n  \"backend_reason\": %s,\n  \"backend_error\": %s,\n",
              json_string(r.backend).c_str(), json_string(r.backend_reason).c_str(),
              json_string(r.backend_error).c_str());
  std::printf("  \"devices\": [");
  for (size_t d = 0; d < r.capacities.size(); ++d)
    std::printf("%s{\"index\": %zu, \"capacity_bytes\": %zu}", d ? ", " : "", d, r.capacities[d]);
  std::printf("],\n");
  std::printf("  \"peer_access\": %s,\n  \"peer_access_error\": %s,\n", peer_matrix_json(r).c_str(),
              json_string(r.peers_error).c_str());
  std::printf("  \"transport\": %s,\n", transport_json(r.transport).c_str());
  const auto& l = r.launch;
  std::printf(
      "  \"launch\": {\"launcher\": %s, \"rank_variable\": %s, \"rank\": %d, \"world_size\": %d, "
      "\"local_rank\": %d, \"local_world_size\": %d, \"error\": %s},\n",
      json_string(l.launcher).c_str(), json_string(l.rank_variable).c_str(), l.rank, l.world_size,
      l.local_rank, l.local_world_size, json_string(r.launch_error).c_str());
  std::printf("  \"store\": {\"url\": %s, \"source\": %s, \"rank0_serves\": %s},\n",
              json_string(l.store_url).c_str(), json_string(l.store_source).c_str(),
              l.rank0_serves_store ? "true" : "false");
  std::printf("  \"paths\": %s,\n", paths_json(r).c_str());
  std::printf("  \"settings\": [");
  bool first = true;
  for (const auto& setting : memloom::base::memloom_settings()) {
    const char* value = std::getenv(setting.name);
    std::printf("%s\n    {\"name\": %s, \"value\": %s, \"default\": %s}", first ? "" : ",",
                json_string(setting.name).c_str(),
                value == nullptr ? "null" : json_string(value).c_str(),
                json_string(setting.default_value).c_str());
    first = false;
  }
  std::printf("\n  ]\n}\n");
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--version") {
      std::puts(memloom::base::version_line("memloom-info").c_str());
      return 0;
    } else if (arg == "--json") {
      json = true;
    } else if (arg == "-h" || arg == "--help") {
      std::puts(
          "usage: memloom-info [--json] [--version]\n"
          "Prints the version and build options, the backend memloom would choose and why, its\n"
          "devices and their peer access matrix (CUDA), the transport across nodes and what UCX\n"
          "offers (version, RDMA, CUDA memory), the launcher variables found and the\n"
          "rank they give, the config store, which path moves the bytes to each kind of peer\n"
          "(this process, same node, other node) for each API and memory kind, and each other\n"
          "rank's kind where the launcher's layout tells, and every MEMLOOM_* setting in\n"
          "effect with its default. --json: the same for scripts.");
      return 0;
    } else {
      std::fprintf(stderr, "memloom-info: unknown option '%s' (try --help)\n", arg.c_str());
      return 2;
    }
  }
  const Report report = gather();
  json ? print_json(report) : print_text(report);
  return 0;
}
