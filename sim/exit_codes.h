// Exit codes of memloom-run besides a failing rank's own code. They follow coreutils `timeout`
// and the shells so scripts can tell the launcher's verdicts from the program's.
#pragma once

namespace memloom::sim {

inline constexpr int kExitSuccess = 0;
inline constexpr int kExitUsage = 2;             // bad options
inline constexpr int kExitTimeout = 124;         // --timeout passed
inline constexpr int kExitLauncherFailed = 125;  // the launcher itself failed (store, fork, ...)
inline constexpr int kExitNotFound = 127;        // the program cannot be found or executed
inline constexpr int kExitSignalBase = 128;      // 128 + signal: a rank or the launcher got it

}  // namespace memloom::sim
