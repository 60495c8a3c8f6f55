// memloom-store: the config store as a standalone program, for jobs whose ranks should not embed
// it. Serves until SIGINT or SIGTERM.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "memloom/error.h"
#include "src/base/environment.h"
#include "src/base/version.h"
#include "src/store/server.h"

namespace {

constexpr const char* kUsage = R"(usage: memloom-store --listen tcp://IP:PORT [options]

Runs the memloom config store (the rendezvous service of memloom jobs) until SIGINT or SIGTERM.
Prints "memloom-store listening on <url>" once it accepts connections.

options:
  --listen URL               address to serve on: tcp://IPv4:PORT or tcp://[IPv6]:PORT;
                             port 0 picks a free port (the printed URL has the real one)
  --heartbeat-timeout-ms N   declare a client down after N ms without a frame from it, unless
                             it announced its own timeout (default 3000)
  --max-frame-bytes N        close connections that send a larger frame (default 64M; units
                             K, M, G accepted)
  --max-value-bytes N        refuse values larger than this (default 64M, or
                             $MEMLOOM_STORE_MAX_VALUE_BYTES)
  --max-total-bytes N        refuse writes that would grow all keys and values past this
                             (default 1G, or $MEMLOOM_STORE_MAX_TOTAL_BYTES; 0: no limit)
  --max-key-bytes N          refuse keys and group names longer than this (default 4096)
  --max-connections N        refuse connections beyond this many (default 4096, lowered to
                             fit the RLIMIT_NOFILE soft limit; the cap in force is printed)
  --max-unauthenticated-connections N
                             connections still in the TLS handshake or before their first
                             frame may hold at most this many (default: a quarter of the cap);
                             the oldest is evicted for a new one
  --auth-timeout-ms N        close plain connections that send no valid first frame within
                             N ms (default 5000)
  --max-waiters-per-connection N
                             refuse waiting gets and watches beyond this many per connection
                             (default 1024; 0: no limit)
  --namespace-grace-ms N     remove a job's keys N ms after its last connection left
                             (default 5000)
  --help                     print this text
  --version                  print the version and build options

Every client works in its job's namespace (MEMLOOM_JOB_ID, or its launcher's job id): clients of
another job cannot read, write or remove its keys.
)";

constexpr uint64_t kMaxHeartbeatMs = 24ull * 3600 * 1000;

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "memloom-store: %s\n\n%s", message.c_str(), kUsage);
  std::exit(2);
}

uint64_t parse_count(const std::string& option, const std::string& text) {
  try {
    return memloom::base::parse_byte_size(text);
  } catch (const memloom::Error& error) {
    usage_error(option + ": " + error.what());
  }
}

std::chrono::milliseconds parse_ms(const std::string& option, const std::string& text) {
  uint64_t ms = parse_count(option, text);
  if (ms == 0 || ms > kMaxHeartbeatMs) {
    usage_error(option + " must be in 1.." + std::to_string(kMaxHeartbeatMs));
  }
  return std::chrono::milliseconds(ms);
}

// Environment defaults, so a store started by a launcher can be sized without new flags.
void apply_environment(memloom::store::ServerOptions& options) {
  if (const char* value = std::getenv("MEMLOOM_STORE_MAX_VALUE_BYTES")) {
    options.max_value_bytes = parse_count("MEMLOOM_STORE_MAX_VALUE_BYTES", value);
  }
  if (const char* value = std::getenv("MEMLOOM_STORE_MAX_TOTAL_BYTES")) {
    options.max_total_bytes = parse_count("MEMLOOM_STORE_MAX_TOTAL_BYTES", value);
  }
}

memloom::store::ServerOptions parse_options(int argc, char** argv) {
  using Setter = std::function<void(memloom::store::ServerOptions&, const std::string&)>;
  const std::map<std::string, Setter> setters = {
      {"--listen", [](auto& options, const auto& value) { options.listen_url = value; }},
      {"--heartbeat-timeout-ms",
       [](auto& options, const auto& value) {
         uint64_t ms = parse_count("--heartbeat-timeout-ms", value);
         if (ms == 0 || ms > kMaxHeartbeatMs) {
           usage_error("--heartbeat-timeout-ms must be in 1.." + std::to_string(kMaxHeartbeatMs));
         }
         options.heartbeat_timeout = std::chrono::milliseconds(ms);
       }},
      {"--max-frame-bytes",
       [](auto& options, const auto& value) {
         options.max_frame_bytes = parse_count("--max-frame-bytes", value);
       }},
      {"--max-value-bytes",
       [](auto& options, const auto& value) {
         options.max_value_bytes = parse_count("--max-value-bytes", value);
       }},
      {"--max-key-bytes",
       [](auto& options, const auto& value) {
         options.max_key_bytes = parse_count("--max-key-bytes", value);
       }},
      {"--max-connections",
       [](auto& options, const auto& value) {
         options.max_connections = parse_count("--max-connections", value);
       }},
      {"--max-total-bytes",
       [](auto& options, const auto& value) {
         options.max_total_bytes = parse_count("--max-total-bytes", value);
       }},
      {"--max-unauthenticated-connections",
       [](auto& options, const auto& value) {
         options.max_unauthenticated_connections =
             parse_count("--max-unauthenticated-connections", value);
       }},
      {"--auth-timeout-ms",
       [](auto& options, const auto& value) {
         options.auth_timeout = parse_ms("--auth-timeout-ms", value);
       }},
      {"--max-waiters-per-connection",
       [](auto& options, const auto& value) {
         options.max_waiters_per_connection = parse_count("--max-waiters-per-connection", value);
       }},
      {"--namespace-grace-ms",
       [](auto& options, const auto& value) {
         options.namespace_grace = parse_ms("--namespace-grace-ms", value);
       }},
  };

  memloom::store::ServerOptions options;
  apply_environment(options);
  bool have_listen = false;
  for (int i = 1; i < argc; ++i) {
    std::string option = argv[i];
    if (option == "--help" || option == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (option == "--version") {
      std::puts(memloom::base::version_line("memloom-store").c_str());
      std::exit(0);
    }
    std::optional<std::string> value;
    size_t equals = option.find('=');
    if (option.rfind("--", 0) == 0 && equals != std::string::npos) {
      value = option.substr(equals + 1);
      option = option.substr(0, equals);
    }
    auto setter = setters.find(option);
    if (setter == setters.end()) usage_error("unknown option '" + option + "'");
    if (!value) {
      if (i + 1 >= argc) usage_error(option + " needs a value");
      value = argv[++i];
    }
    setter->second(options, *value);
    have_listen = have_listen || option == "--listen";
  }
  if (!have_listen) usage_error("--listen is required");
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  memloom::store::ServerOptions options = parse_options(argc, argv);

  // Blocked before the server thread starts, so it inherits the mask and sigwait below is the
  // only place the signals arrive.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  std::unique_ptr<memloom::store::Server> server;
  try {
    server = memloom::store::Server::start(options);
  } catch (const memloom::Error& error) {
    std::fprintf(stderr, "memloom-store: %s\n", error.what());
    return error.status() == memloom::Status::kInvalidInput ? 2 : 1;
  }
  std::printf("memloom-store listening on %s\n", server->url().c_str());
  std::fflush(stdout);
  std::fprintf(stderr, "memloom-store: serving at most %zu connections\n",
               server->max_connections());

  int received = 0;
  sigwait(&signals, &received);
  std::fprintf(stderr, "memloom-store: %s received, stopping (%zu connections open)\n",
               strsignal(received), server->connection_count());
  server->stop();
  return 0;
}
