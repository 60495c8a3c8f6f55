/* OpenSHMEM reference for memloom-bench shm/bm: putmem/getmem between PE 0 and PE 1 and
 * shmem_barrier_all, timed the way memloom-bench times memloom (best of several samples of a
 * calibrated number of operations), so the two figures compare.
 *
 *   oshrun -np N shmem_putget BARRIER_ITERATIONS [COPY_SIZE ...]
 *
 * Prints, on PE 0, one line per figure: "putmem BYTES SECONDS_PER_OP", "getmem BYTES ...",
 * "barrier_all NPES SECONDS_PER_OP". Copies run only with 2 or more PEs (PE 0 to PE 1). */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* memloom-bench takes 51 samples of each copy and runs this program twice: 2 x 26. */
#define COPY_SAMPLES 26
#define SAMPLE_SECONDS 0.005
#define BARRIER_SAMPLES 7

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Calibrated by PE 0 alone: the other PEs wait in a barrier meanwhile. */
static double time_copy(int get, char* symmetric, char* local, size_t bytes) {
  long count = 1;
  double best = 1e30;
  /* First touch of both buffers, so no sample pays for page faults. */
  if (get)
    shmem_getmem(local, symmetric, bytes, 1);
  else {
    shmem_putmem(symmetric, local, bytes, 1);
    shmem_quiet();
  }
  for (int sample = 0; sample < COPY_SAMPLES;) {
    double start = now_seconds();
    for (long i = 0; i < count; ++i) {
      if (get) {
        shmem_getmem(local, symmetric, bytes, 1);
      } else {
        shmem_putmem(symmetric, local, bytes, 1);
        shmem_quiet(); /* complete, as memloom's copies are when they return */
      }
    }
    double elapsed = now_seconds() - start;
    if (elapsed < SAMPLE_SECONDS && count < (1L << 30)) { /* still calibrating */
      count *= 2;
      continue;
    }
    if (elapsed / (double)count < best) best = elapsed / (double)count;
    ++sample;
  }
  return best;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: oshrun -np N %s BARRIER_ITERATIONS [COPY_SIZE ...]\n", argv[0]);
    return 2;
  }
  long iterations = atol(argv[1]);
  size_t largest = 8;
  for (int a = 2; a < argc; ++a) {
    size_t bytes = strtoull(argv[a], NULL, 10);
    if (bytes > largest) largest = bytes;
  }
  shmem_init();
  int me = shmem_my_pe(), npes = shmem_n_pes();
  char* symmetric = shmem_malloc(largest);
  char* local = malloc(largest);
  if (symmetric == NULL || local == NULL || iterations <= 0) {
    fprintf(stderr, "shmem_putget: cannot allocate %zu bytes (or bad iteration count)\n", largest);
    shmem_global_exit(1);
  }
  memset(local, 1, largest);
  memset(symmetric, 0, largest);
  shmem_barrier_all();

  if (npes >= 2) {
    for (int a = 2; a < argc; ++a) {
      size_t bytes = strtoull(argv[a], NULL, 10);
      if (me == 0) {
        printf("putmem %zu %.9g\n", bytes, time_copy(0, symmetric, local, bytes));
        printf("getmem %zu %.9g\n", bytes, time_copy(1, symmetric, local, bytes));
        fflush(stdout);
      }
      shmem_barrier_all();
    }
  }

  double best = 1e30;
  for (int i = 0; i < iterations / 10 + 1; ++i) shmem_barrier_all(); /* warm-up */
  for (int sample = 0; sample < BARRIER_SAMPLES; ++sample) {
    double start = now_seconds();
    for (long i = 0; i < iterations; ++i) shmem_barrier_all();
    double elapsed = (now_seconds() - start) / (double)iterations;
    if (elapsed < best) best = elapsed;
  }
  if (me == 0) {
    printf("barrier_all %d %.9g\n", npes, best);
    fflush(stdout);
  }
  shmem_barrier_all();
  shmem_free(symmetric);
  free(local);
  shmem_finalize();
  return 0;
}
