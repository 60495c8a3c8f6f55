// memloom-bench: each benchmark is a subcommand in its own file that registers itself here.
// Every benchmark prints its figures next to a reference measured in the same run (machines are
// shared and noisy, so only ratios compare across runs).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace memloom::bench {

struct BenchCommand {
  std::string name;
  std::string summary;
  std::function<int(const std::vector<std::string>& args)> run;
};

std::map<std::string, BenchCommand>& registry();

struct Registrar {
  explicit Registrar(BenchCommand command) { registry()[command.name] = std::move(command); }
};

}  // namespace memloom::bench

#define MEMLOOM_BENCH_CONCAT2(a, b) a##b
#define MEMLOOM_BENCH_CONCAT(a, b) MEMLOOM_BENCH_CONCAT2(a, b)
#define MEMLOOM_REGISTER_BENCH(NAME, SUMMARY, FN)          \
  static ::memloom::bench::Registrar MEMLOOM_BENCH_CONCAT( \
      bench_registrar_, __LINE__)(::memloom::bench::BenchCommand{NAME, SUMMARY, FN})
