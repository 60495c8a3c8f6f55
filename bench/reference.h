// Reference measurements taken in the same run as the figure they are compared with.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace memloom::bench {

// Single-thread memcpy bandwidth (bytes/s) for copies of `bytes`, median of `repetitions`.
double memcpy_bandwidth(size_t bytes, int repetitions);

// Seconds since an arbitrary origin (steady clock).
double now_seconds();

// "1.23 GB/s" style formatting.
std::string format_rate(double bytes_per_second);
std::string format_bytes(size_t bytes);

// Prints one result line: "<name>: <value> <unit>  (<ratio>x <reference name>)".
void report(const std::string& name, double value, const std::string& unit, double reference,
            const std::string& reference_name);

// --- References timed like memloom's figures (bench_timing.h: the best of several samples);
// memcpy is timed inside the ranks, paired with the copies (bench_timing.h: time_paired) ---

// Best seconds to stream `bytes` over loopback TCP with plain sockets to another process (forked
// here) and get its one-byte acknowledgement back: what a synchronous remote write costs at
// least. Throws std::runtime_error when the socket pair cannot be set up or stalls for 60 s.
double tcp_stream_seconds(size_t bytes);

// A reference program (bench/reference_programs/, built next to memloom-bench only when Open MPI
// is installed) run under its launcher. Each output line "NAME ARG VALUE" becomes
// figures["NAME ARG"] = VALUE. Without the program or its launcher, available is false and `why`
// says what is missing; memloom-bench then prints "unavailable" instead of a ratio.
struct ReferenceRun {
  bool available = false;
  std::string why;
  std::map<std::string, double> figures;

  std::optional<double> figure(const std::string& name) const;
};
enum class Launcher { kOpenShmem, kOpenMpi };
ReferenceRun run_reference_program(Launcher launcher, const std::string& program, int ranks,
                                   const std::vector<std::string>& args, int timeout_seconds);

// --- Result lines with a target ---

enum class Verdict { kNoTarget, kPass, kMiss, kUnavailable };

// One figure against one reference. `speedup` is how many times as fast as the reference memloom
// is (our rate / its rate, or its time / our time), nullopt when the reference did not run (then
// `why` is printed). With a target, PASS means speedup >= target.
Verdict report_against(const std::string& name, double value, const std::string& unit,
                       std::optional<double> speedup, const std::string& reference_name,
                       std::optional<double> target, const std::string& why = "");

// Counts verdicts and prints the summary line at the end of a benchmark.
struct VerdictTally {
  int pass = 0, miss = 0, unavailable = 0;
  std::vector<std::string> missed, not_measured;  // "name: 0.71x, target >= 0.90x" / "name (why)"
  // Counts `verdict`, which report_against just returned, with that figure's name and numbers.
  void add(Verdict verdict);
  // The benchmark's last line: its verdict, and which figures missed and why.
  void print(const std::string& benchmark) const;
};

// Prints a section heading.
void report_heading(const std::string& text);

}  // namespace memloom::bench
