// memloom-bench <benchmark> [args]: runs one registered benchmark; with no argument lists them.
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_registry.h"
#include "src/base/version.h"

namespace memloom::bench {
std::map<std::string, BenchCommand>& registry() {
  static std::map<std::string, BenchCommand> commands;
  return commands;
}
}  // namespace memloom::bench

int main(int argc, char** argv) {
  auto& commands = memloom::bench::registry();
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::printf("usage: memloom-bench <benchmark> [options] | --version\n\nbenchmarks:\n");
    for (const auto& [name, command] : commands) {
      std::printf("  %-12s %s\n", name.c_str(), command.summary.c_str());
    }
    return argc < 2 ? 2 : 0;
  }
  if (std::string(argv[1]) == "--version") {
    std::puts(memloom::base::version_line("memloom-bench").c_str());
    return 0;
  }
  auto it = commands.find(argv[1]);
  if (it == commands.end()) {
    std::fprintf(stderr,
                 "memloom-bench: unknown benchmark '%s' (run without arguments for the list)\n",
                 argv[1]);
    return 2;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  return it->second.run(args);
}
