// Which launcher started this process, and the rank layout and config store it gives. Ranks are
// started by torchrun, mpirun and srun far more often than by memloom-run, so the library reads
// all of them, first match wins:
//   1. memloom's own: MEMLOOM_RANK, MEMLOOM_WORLD_SIZE, MEMLOOM_LOCAL_RANK, MEMLOOM_LOCAL_SIZE
//   2. torchrun: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE
//   3. Open MPI: OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE
//   4. Slurm: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID (local size from SLURM_TASKS_PER_NODE)
// The store, first match wins: MEMLOOM_STORE_URL (a store someone runs: memloom-run,
// memloom-store); else one rank 0 serves at MASTER_ADDR, port MASTER_PORT + 1 (MASTER_PORT itself
// is torch's own store); else on Slurm at the first host of the job; else, when every rank is on
// this host (Open MPI, Slurm), at 127.0.0.1. Without MASTER_PORT the port is MEMLOOM_STORE_PORT, or
// one derived from the launcher's job id, so every rank of a job computes the same one.
#pragma once

#include <string>

namespace memloom::base {

struct LaunchInfo {
  std::string launcher;       // "memloom", "torchrun", "Open MPI", "Slurm"; "" for none found
  std::string rank_variable;  // the variable that gave the rank, "" for none
  int rank = -1;
  int world_size = -1;
  int local_rank = -1;
  int local_world_size = -1;
  std::string store_url;     // "" when no store can be found from the environment
  std::string store_source;  // what gave it: "MEMLOOM_STORE_URL", "MASTER_ADDR, MASTER_PORT + 1"
  // No store runs yet: rank 0 serves one at store_url, the others connect to it.
  bool rank0_serves_store = false;

  bool found() const { return !launcher.empty(); }
  // "rank 2 of 4 (local 0 of 2) from torchrun (RANK)", for logs and memloom-info.
  std::string describe() const;
};

// Reads the environment (each call: a forked child that sets its own variables is seen). Throws
// kInvalidValue naming the variable when one is not a number or the ranks do not fit.
LaunchInfo detect_launch();
// The same, logged at info once per process: which variable won.
LaunchInfo detect_launch_logged();

// Logs, once per process and at info, which launcher's variables were found (or, at debug, why
// they could not be read); never throws. The APIs' init calls it.
void log_launch_once() noexcept;

// The first host of a Slurm host list: "node[07-09,12],gpu1" gives "node07".
std::string first_slurm_host(const std::string& node_list);
// The tasks on node `node` of SLURM_TASKS_PER_NODE ("2(x3),1": 2, 2, 2, 1); -1 when unknown.
int slurm_tasks_on_node(const std::string& tasks_per_node, int node);

}  // namespace memloom::base
