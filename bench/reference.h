// Reference measurements taken in the same run as the figure they are compared with.
#pragma once

#include <cstddef>
#include <string>

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

}  // namespace memloom::bench
