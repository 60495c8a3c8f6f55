#include "sim/launch_options.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "memloom/error.h"
#include "sim/exit_codes.h"
#include "src/store/url.h"

namespace memloom::sim {
namespace {

[[noreturn]] void bad_option(const std::string& message) {
  raise(Status::kInvalidInput, message);
}

int parse_int(const std::string& option, const std::string& text, int min, int max) {
  int value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) {
    bad_option(option + " expects an integer, got '" + text + "'");
  }
  if (value < min || value > max) {
    bad_option(option + " must be between " + std::to_string(min) + " and " + std::to_string(max) +
               ", got " + text);
  }
  return value;
}

// Seconds may be fractional ("0.5"); negative, infinite and NaN values are refused.
double parse_seconds(const std::string& option, const std::string& text, bool allow_zero) {
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value)) {
    bad_option(option + " expects a number of seconds, got '" + text + "'");
  }
  if (value < 0.0 || (!allow_zero && value == 0.0)) {
    bad_option(option + " must be " + (allow_zero ? "at least 0" : "greater than 0") +
               " seconds, got " + text);
  }
  return value;
}

// Walks the argument list; options take their value either as the next argument or after '='.
class ArgumentReader {
 public:
  explicit ArgumentReader(const std::vector<std::string>& args) : args_(args) {}

  bool done() const { return index_ >= args_.size(); }
  const std::string& peek() const { return args_[index_]; }
  std::string next() { return args_[index_++]; }
  std::vector<std::string> rest() {
    std::vector<std::string> out(args_.begin() + static_cast<long>(index_), args_.end());
    index_ = args_.size();
    return out;
  }
  std::string value_of(const std::string& option, const std::optional<std::string>& inline_value) {
    if (inline_value) return *inline_value;
    if (done()) bad_option(option + " needs a value");
    return next();
  }

 private:
  const std::vector<std::string>& args_;
  size_t index_ = 0;
};

}  // namespace

std::string store_url_problem(const std::string& url) {
  try {
    if (store::is_etcd_url(url)) {
      store::parse_etcd_url(url);
      return "";
    }
    if (store::parse_tcp_url(url).port == 0) return "'" + url + "' names port 0";
    return "";
  } catch (const Error& error) {
    return error.what();
  }
}

bool is_valid_store_url(const std::string& url) {
  return store_url_problem(url).empty();
}

namespace {

// With MEMLOOM_BACKEND=cuda the ranks' devices are real GPUs: the default --devices-per-node is
// the number visible (CUDA_VISIBLE_DEVICES' entries, else the /dev/nvidiaN device files), so that a
// node with more ranks than GPUs shares them instead of naming GPUs that do not exist.
int default_devices_per_node() {
  const char* backend = std::getenv("MEMLOOM_BACKEND");
  if (backend == nullptr || std::string(backend) != "cuda") return 8;
  int gpus = 0;
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"); visible != nullptr) {
    std::stringstream list(visible);
    for (std::string entry; std::getline(list, entry, ',');) {
      if (!entry.empty()) ++gpus;
    }
  } else {
    std::error_code error;
    for (const auto& file : std::filesystem::directory_iterator("/dev", error)) {
      const std::string name = file.path().filename().string();
      if (name.size() > 6 && name.rfind("nvidia", 0) == 0 &&
          name.find_first_not_of("0123456789", 6) == std::string::npos) {
        ++gpus;
      }
    }
  }
  return gpus > 0 ? gpus : 8;
}

}  // namespace

LaunchOptions parse_launch_options(const std::vector<std::string>& args) {
  LaunchOptions options;
  options.devices_per_node = default_devices_per_node();
  bool have_ranks = false;
  std::vector<int> kill_ranks;
  std::vector<double> kill_afters;
  ArgumentReader reader(args);

  while (!reader.done()) {
    std::string arg = reader.next();
    if (arg == "--") {
      options.command = reader.rest();
      break;
    }
    if (arg.empty() || arg[0] != '-') {
      // The first word that is not an option starts the command, as with mpirun.
      options.command.push_back(arg);
      auto rest = reader.rest();
      options.command.insert(options.command.end(), rest.begin(), rest.end());
      break;
    }
    std::string name = arg;
    std::optional<std::string> inline_value;
    if (arg.rfind("--", 0) == 0) {
      size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        name = arg.substr(0, eq);
        inline_value = arg.substr(eq + 1);
      }
    } else if (arg.size() > 2 && arg.rfind("-n", 0) == 0 &&
               (arg[2] == '=' || (arg[2] >= '0' && arg[2] <= '9'))) {
      name = "-n";  // -n4 or -n=4
      inline_value = arg.substr(arg[2] == '=' ? 3 : 2);
    }

    auto no_value = [&] {
      if (inline_value) bad_option(name + " takes no value");
    };
    if (name == "-h" || name == "--help") {
      options.show_help = true;
      return options;
    } else if (name == "--version") {
      options.show_version = true;
      return options;
    } else if (name == "-n") {
      options.ranks = parse_int("-n", reader.value_of(name, inline_value), 1, kMaxRanks);
      have_ranks = true;
    } else if (name == "--nodes") {
      options.nodes = parse_int(name, reader.value_of(name, inline_value), 1, kMaxRanks);
    } else if (name == "--devices-per-node") {
      options.devices_per_node = parse_int(name, reader.value_of(name, inline_value), 1, 1024);
    } else if (name == "--store") {
      options.store_url = reader.value_of(name, inline_value);
      if (std::string problem = store_url_problem(options.store_url); !problem.empty()) {
        bad_option("--store: " + problem);
      }
    } else if (name == "--timeout") {
      options.timeout_seconds = parse_seconds(name, reader.value_of(name, inline_value), false);
    } else if (name == "--grace") {
      options.grace_seconds = parse_seconds(name, reader.value_of(name, inline_value), true);
    } else if (name == "--kill-rank") {
      kill_ranks.push_back(parse_int(name, reader.value_of(name, inline_value), 0, kMaxRanks - 1));
    } else if (name == "--kill-after") {
      kill_afters.push_back(parse_seconds(name, reader.value_of(name, inline_value), true));
    } else if (name == "--tag-output") {
      no_value();
      options.tag_output = true;
    } else if (name == "--no-tag-output") {
      no_value();
      options.tag_output = false;
    } else {
      bad_option("unknown option '" + arg + "'");
    }
  }

  if (!have_ranks) bad_option("-n N (the number of ranks) is required");
  if (options.command.empty()) bad_option("no program given; write it after '--'");
  if (options.nodes > options.ranks) {
    bad_option("--nodes " + std::to_string(options.nodes) + " exceeds -n " +
               std::to_string(options.ranks) + ": every emulated node needs at least one rank");
  }
  if (kill_ranks.size() != kill_afters.size()) {
    bad_option("every --kill-rank needs a matching --kill-after (got " +
               std::to_string(kill_ranks.size()) + " --kill-rank and " +
               std::to_string(kill_afters.size()) + " --kill-after)");
  }
  for (size_t i = 0; i < kill_ranks.size(); ++i) {
    if (kill_ranks[i] >= options.ranks) {
      bad_option("--kill-rank " + std::to_string(kill_ranks[i]) + " is not a rank of -n " +
                 std::to_string(options.ranks));
    }
    options.kills.push_back(RankKill{kill_ranks[i], kill_afters[i]});
  }
  return options;
}

std::string launch_usage() {
  std::ostringstream out;
  out << R"(Usage: memloom-run -n N [options] -- PROGRAM [ARGS...]

Runs N ranks of PROGRAM on M emulated nodes of this machine, with a config store for their
rendezvous, and supervises them like a cluster job: one failing rank ends the job.

Options:
  -n N                    number of ranks to start (1..)"
      << kMaxRanks << R"(, required)
  --nodes M               emulated nodes; ranks are dealt to them in contiguous blocks
                          (rank r is on node floor(r*M/N)); 1 <= M <= N (default 1)
  --devices-per-node D    devices per node; a rank's device is its local rank modulo D
                          (default 8; with MEMLOOM_BACKEND=cuda, the GPUs visible)
  --store URL             use this config store instead of starting an embedded one:
                          tcp://HOST:PORT, or etcd://HOST:PORT[,HOST:PORT...] for etcd
                          (the embedded store listens on 127.0.0.1 on a free port)
  --timeout S             stop the job S seconds (fractions allowed) after every rank has
                          started and exit 124 (default: no limit)
  --grace S               after a rank fails, let the others run S more seconds before
                          stopping them (default 3)
  --kill-rank R --kill-after S
                          fault injection: SIGKILL rank R (its process group) S seconds after
                          every rank has started; repeatable, the i-th --kill-rank pairs with
                          the i-th --kill-after; injections due together happen in the order
                          given
  --tag-output            prefix every line a rank prints with "[rank R] " (default); stdout
                          stays stdout and stderr stays stderr, and lines of different ranks
                          never mix within a line
  --no-tag-output         let ranks write to the launcher's stdout/stderr unchanged
  -h, --help              print this help and exit
  --version               print the version and build options and exit

Options taking a value also accept --option=VALUE. The first word that is not an option starts
the command, but writing '--' before it is clearer.

Stopping: when a rank exits non-zero or is killed by a signal, the others get --grace seconds,
then SIGTERM, then SIGKILL one second later. --timeout stops everything the same way. SIGINT,
SIGTERM or SIGHUP sent to memloom-run are forwarded to every rank, which get SIGKILL one second
later (a second signal kills them at once). Ranks read stdin from /dev/null.

Environment of each rank (on top of memloom-run's own):
  MEMLOOM_RANK            the rank, 0..N-1
  MEMLOOM_WORLD_SIZE      N
  MEMLOOM_LOCAL_RANK      the rank's index within its node
  MEMLOOM_LOCAL_SIZE      the number of ranks on its node
  MEMLOOM_NODE            the job-unique node name, "<job id>-node<k>"
  MEMLOOM_DEVICE          the emulated device: local rank modulo D
  MEMLOOM_EMU_DEVICES     D, the emulated devices per node
  MEMLOOM_STORE_URL       the config store, tcp://HOST:PORT or etcd://HOST:PORT[,...]
  MEMLOOM_JOB_ID          an identifier unique to this run
  MEMLOOM_JOB_SECRET      128 random bits (hex), new per run: the ranks' store clients prove
                          with it that they belong to the job (any MEMLOOM_JOB_SECRET of
                          memloom-run's own environment is replaced)
  MEMLOOM_RUNTIME_DIR     a private directory for this job under $XDG_RUNTIME_DIR (or /tmp),
                          removed when the job ends

Cleanup: when the job ends, for any reason, memloom-run kills whatever is left of every rank's
process group, removes /dev/shm entries named "memloom.<job id>*" and the runtime directory.
Ranks die with memloom-run if it is killed (they get SIGKILL through PR_SET_PDEATHSIG).

Exit status:
  0       every rank exited with code 0
  C       the first rank to fail exited with code C
  128+S   the first rank to fail was killed by signal S (e.g. 137 for SIGKILL), or memloom-run
          itself got signal S before any rank failed
  )" << kExitUsage
      << R"(       bad options
  )" << kExitTimeout
      << R"(     --timeout passed before any rank failed
  )" << kExitLauncherFailed
      << R"(     memloom-run itself failed (store, runtime directory, fork)
  )" << kExitNotFound
      << R"(     PROGRAM was not found or could not be executed
The first cause wins: a rank failing after --timeout passed or after memloom-run was signalled
does not change the status. memloom-run reports the cause in one line on stderr.
)";
  return out.str();
}

}  // namespace memloom::sim
