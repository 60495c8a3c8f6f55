// One memloom-run job from start to end: the runtime directory, the config store, the ranks,
// and the cleanup that must happen however the job ends.
#pragma once

#include "sim/launch_options.h"

namespace memloom::sim {

// Runs the job described by options (already validated) and returns memloom-run's exit code.
// Prints the verdict line and any launcher error on stderr; never throws.
int run_job(const LaunchOptions& options);

}  // namespace memloom::sim
