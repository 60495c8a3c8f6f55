// What the tools print for --version and memloom-info: the version and the options of the build.
#pragma once

#include <string>

namespace memloom::base {

// "0.1.0".
const char* version();
// "RelWithDebInfo, GNU 12.2.0, CUDA module: AUTO, sanitizers: none".
const char* build_options();
// "memloom-run 0.1.0 (RelWithDebInfo, ...)": one line for a tool's --version.
std::string version_line(const std::string& tool);

}  // namespace memloom::base
