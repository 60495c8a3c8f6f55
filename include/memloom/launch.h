/*
 * memloom under the launchers users already have: which rank this process is and where the job's
 * config store is, from memloom-run, torchrun, Open MPI's mpirun or Slurm's srun, and the
 * WholeMemory unique id shared through that store so no program writes it to a file by hand.
 *
 * The rule (first match wins):
 *   rank, world size, local rank, local size:
 *     1. MEMLOOM_RANK, MEMLOOM_WORLD_SIZE, MEMLOOM_LOCAL_RANK, MEMLOOM_LOCAL_SIZE (memloom-run)
 *     2. RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE (torchrun)
 *     3. OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE (Open MPI)
 *     4. SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_TASKS_PER_NODE (Slurm)
 *   config store:
 *     1. MEMLOOM_STORE_URL: a store that runs (memloom-run's, memloom-store)
 *     2. MASTER_ADDR: rank 0 serves one there, port MASTER_PORT + 1 (MASTER_PORT is torch's own)
 *     3. Slurm: rank 0 serves one on the first host of the job
 *     4. every rank on this host (local size = world size): rank 0 serves one on 127.0.0.1
 *   The port of 2-4 is MEMLOOM_STORE_PORT when set, else MASTER_PORT + 1, else derived from the
 *   launcher's job id. Host names are resolved once (IPv4 or IPv6).
 */
#ifndef MEMLOOM_LAUNCH_H_
#define MEMLOOM_LAUNCH_H_

#include <memloom/stream.h>
#include <wholememory/wholememory.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct memloom_launch_info {
  int rank;               /* -1 when no launcher was found */
  int world_size;         /* -1 when no launcher was found */
  int local_rank;         /* -1 when the launcher does not say */
  int local_world_size;   /* -1 when the launcher does not say */
  int rank0_serves_store; /* 1: no store runs yet, rank 0 serves store_url (smem: pass
                             startConfigStoreServer = true) */
  char launcher[32];      /* "memloom", "torchrun", "Open MPI", "Slurm", "" */
  char rank_variable[32]; /* the variable that gave the rank: "RANK", "OMPI_COMM_WORLD_RANK" */
  char store_url[256];    /* "tcp://node17:29501", "" when none can be found */
  char store_source[128]; /* what gave it: "MASTER_ADDR, MASTER_PORT + 1" */
  int device; /* the device for this rank (smem_bm_init's deviceId, smem_shm_init's): MEMLOOM_DEVICE
                 (memloom-run sets it), else the local rank (one device per rank of a node),
                 else 0 */
} memloom_launch_info_t;

/* Fills `info` from the environment. MEMLOOM_STATUS_SUCCESS when a launcher was found,
 * MEMLOOM_STATUS_NOT_FOUND (info filled, rank -1) when none was, MEMLOOM_STATUS_INVALID_VALUE
 * (logged, naming the variable) when one is set to something that is not a rank layout. */
memloom_status_t memloom_get_launch_info(memloom_launch_info_t* info);

/* The same WholeMemory unique id on every rank of the job, through the job's config store:
 * rank 0 creates it (serving the store first when the launcher runs none) and publishes it, the
 * others wait for it (MEMLOOM_TIMEOUT_S). Collective: every rank of `world_size` calls it, the
 * same number of times, after wholememory_init. Rank 0 returns once every rank has the id. */
wholememory_error_code_t memloom_wholememory_share_unique_id(wholememory_unique_id_t* unique_id,
                                                             int rank, int world_size);

#ifdef __cplusplus
}
#endif

#endif /* MEMLOOM_LAUNCH_H_ */
