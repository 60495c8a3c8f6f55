// How each example learns its rank: from whichever launcher started it (memloom/launch.h), or it
// says how to start it. Header only, like wholememory_buffers.h, so every example still builds from
// its own folder.
#pragma once

#include <memloom/launch.h>

#include <cstdio>
#include <cstdlib>

namespace memloom_examples {

// The rank layout, device and config store that the launcher gave. Without a launcher (or a store
// to meet the other ranks at) prints how to start the program and exits with status 2:
// `run_options` are memloom-run's ("-n 4 --nodes 2"), `arguments` the program's own ("[rows]").
inline memloom_launch_info_t launch_info_or_exit(const char* argv0, const char* run_options,
                                                 const char* arguments) {
  memloom_launch_info_t launch;
  if (memloom_get_launch_info(&launch) == MEMLOOM_STATUS_SUCCESS && launch.store_url[0] != '\0') {
    return launch;
  }
  std::fprintf(stderr,
               "run me under a launcher: memloom-run %s -- %s %s (or mpirun -np 4, torchrun "
               "--nproc-per-node 4 --no-python, srun)\n",
               run_options, argv0, arguments);
  std::exit(2);
}

}  // namespace memloom_examples
