// Command line of memloom-run: what to launch and how to supervise it. Parsing is kept apart from
// launching so that every rule about options can be tested without starting a process.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace memloom::sim {

// One fault injection: SIGKILL the rank's process group `after_seconds` after launch.
struct RankKill {
  int rank = 0;
  double after_seconds = 0.0;
};

struct LaunchOptions {
  int ranks = 0;             // -n (required)
  int nodes = 1;             // --nodes: emulated nodes, ranks dealt in contiguous blocks
  int devices_per_node = 8;  // --devices-per-node
  std::string store_url;     // --store; empty: start an embedded store
  std::optional<double> timeout_seconds;  // --timeout; none: no limit
  double grace_seconds = 3.0;             // --grace: how long survivors may run after a failure
  std::vector<RankKill> kills;            // --kill-rank/--kill-after pairs, in command-line order
  bool tag_output = true;                 // --tag-output / --no-tag-output
  bool show_help = false;                 // --help: print usage and exit 0
  bool show_version = false;              // --version: print the version and exit 0
  std::vector<std::string> command;       // everything after "--": the program and its arguments
};

// Upper bound on -n: every rank costs two pipes and a process, and a typo like -n 40000 should be
// rejected before it exhausts the machine.
inline constexpr int kMaxRanks = 4096;

// Parses the arguments after argv[0]. Throws memloom::Error(kInvalidInput) with a message meant
// for the user on any bad option. With --help, returns show_help = true and checks nothing else.
LaunchOptions parse_launch_options(const std::vector<std::string>& args);

// The --help text: every option, the environment each rank receives, and the exit codes.
std::string launch_usage();

// What the ranks' store clients would refuse in `url` ("" for nothing), by the library's own
// parsers so memloom-run and its ranks agree: "tcp://HOST:PORT" (a host name is resolved),
// "tcp://IPv4:PORT", "tcp://[IPv6]:PORT", a port in 1..65535, or etcd's
// "etcd://HOST:PORT[,HOST:PORT...]".
std::string store_url_problem(const std::string& url);
bool is_valid_store_url(const std::string& url);

}  // namespace memloom::sim
