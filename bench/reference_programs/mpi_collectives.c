/* Open MPI reference for memloom-bench shm: MPI_Barrier and an 8-byte MPI_Allgather over
 * MPI_COMM_WORLD, timed the way memloom-bench times memloom's barrier and allgather (the best of
 * several samples of ITERATIONS calls each), so the two figures compare.
 *
 *   mpirun -np N mpi_collectives ITERATIONS
 *
 * Prints, on rank 0: "barrier NRANKS SECONDS_PER_CALL" and "allgather NRANKS SECONDS_PER_CALL". */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define SAMPLES 7

typedef void (*collective_fn)(uint64_t* send, uint64_t* receive);

static void barrier(uint64_t* send, uint64_t* receive) {
  (void)send;
  (void)receive;
  MPI_Barrier(MPI_COMM_WORLD);
}

static void allgather(uint64_t* send, uint64_t* receive) {
  MPI_Allgather(send, 8, MPI_BYTE, receive, 8, MPI_BYTE, MPI_COMM_WORLD);
}

static double best_seconds(collective_fn fn, long iterations, uint64_t* send, uint64_t* receive) {
  for (long i = 0; i < iterations / 10 + 1; ++i) fn(send, receive); /* warm-up */
  double best = 1e30;
  for (int sample = 0; sample < SAMPLES; ++sample) {
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (long i = 0; i < iterations; ++i) fn(send, receive);
    double elapsed = (MPI_Wtime() - start) / (double)iterations;
    if (elapsed < best) best = elapsed;
  }
  return best;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long iterations = argc > 1 ? atol(argv[1]) : 0;
  uint64_t* receive = malloc(sizeof(uint64_t) * (size_t)size);
  if (iterations <= 0 || receive == NULL) {
    if (rank == 0) fprintf(stderr, "usage: mpirun -np N %s ITERATIONS\n", argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  uint64_t send = (uint64_t)rank;
  double barrier_seconds = best_seconds(barrier, iterations, &send, receive);
  double allgather_seconds = best_seconds(allgather, iterations, &send, receive);
  for (int r = 0; r < size; ++r) {
    if (receive[r] != (uint64_t)r) {
      fprintf(stderr, "mpi_collectives: allgather returned the wrong value for rank %d\n", r);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  if (rank == 0) {
    printf("barrier %d %.9g\n", size, barrier_seconds);
    printf("allgather %d %.9g\n", size, allgather_seconds);
    fflush(stdout);
  }
  free(receive);
  MPI_Finalize();
  return 0;
}
