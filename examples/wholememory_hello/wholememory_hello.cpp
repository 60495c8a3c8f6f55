// wholememory_hello: four ranks share one table through the WholeMemory API.
//
// The program forks its four ranks itself. Rank 0 creates the unique id (and with it a config
// store inside its process, unless MEMLOOM_STORE_URL names one) and hands it to the others through
// a pipe; an MPI program would broadcast it instead. Each rank writes the rows of its own
// partition of a host-memory CONTINUOUS table, then every rank reads the whole table back through
// the global pointer.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include <wholememory/wholememory.h>

namespace {

constexpr int kRanks = 4;
constexpr size_t kRows = 1003;  // not a multiple of the rank count: the last rank gets fewer
constexpr size_t kColumns = 6;
using Row = float[kColumns];

float cell(size_t row, size_t column) {
  return static_cast<float>(row * 100 + column);
}

wholememory_error_code_t run_rank(int rank, int id_pipe[2]) {
  WHOLEMEMORY_RETURN_ON_FAIL(wholememory_init(0, LEVEL_WARN));
  // Only rank 0 keeps the write end, so the others see end-of-file if it dies before sending.
  close(id_pipe[rank == 0 ? 0 : 1]);
  wholememory_unique_id_t id;
  if (rank == 0) {
    WHOLEMEMORY_RETURN_ON_FAIL(wholememory_create_unique_id(&id));
    for (int peer = 1; peer < kRanks; ++peer) {
      if (write(id_pipe[1], &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id)))
        return WHOLEMEMORY_SYSTEM_ERROR;
    }
  } else if (read(id_pipe[0], &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) {
    return WHOLEMEMORY_SYSTEM_ERROR;
  }

  wholememory_comm_t comm;
  WHOLEMEMORY_RETURN_ON_FAIL(wholememory_create_communicator(&comm, id, rank, kRanks));

  // Rows are never split between ranks: the granularity is one row.
  wholememory_handle_t table;
  WHOLEMEMORY_RETURN_ON_FAIL(wholememory_malloc(&table, kRows * sizeof(Row), comm,
                                                WHOLEMEMORY_MT_CONTINUOUS, WHOLEMEMORY_ML_HOST,
                                                sizeof(Row)));
  void* local;
  size_t local_size, local_offset;
  WHOLEMEMORY_RETURN_ON_FAIL(
      wholememory_get_local_memory(&local, &local_size, &local_offset, table));
  const size_t first_row = local_offset / sizeof(Row), row_count = local_size / sizeof(Row);
  Row* mine = static_cast<Row*>(local);
  for (size_t i = 0; i < row_count; ++i) {
    for (size_t c = 0; c < kColumns; ++c) mine[i][c] = cell(first_row + i, c);
  }
  std::printf("rank %d wrote rows %zu..%zu\n", rank, first_row, first_row + row_count - 1);
  WHOLEMEMORY_RETURN_ON_FAIL(wholememory_communicator_barrier(comm));

  void* global;
  WHOLEMEMORY_RETURN_ON_FAIL(wholememory_get_global_pointer(&global, table));
  const Row* rows = static_cast<const Row*>(global);
  for (size_t r = 0; r < kRows; ++r) {
    for (size_t c = 0; c < kColumns; ++c) {
      if (rows[r][c] != cell(r, c)) {
        std::fprintf(stderr, "rank %d: row %zu column %zu holds %g\n", rank, r, c, rows[r][c]);
        return WHOLEMEMORY_LOGIC_ERROR;
      }
    }
  }
  std::printf("rank %d read all %zu rows back\n", rank, kRows);

  WHOLEMEMORY_RETURN_ON_FAIL(wholememory_communicator_barrier(comm));  // done reading
  WHOLEMEMORY_RETURN_ON_FAIL(wholememory_free(table));
  WHOLEMEMORY_RETURN_ON_FAIL(wholememory_destroy_communicator(comm));
  return wholememory_finalize();
}

}  // namespace

int main() {
  int id_pipe[2];
  if (pipe(id_pipe) != 0) return 1;
  std::fflush(stdout);
  pid_t children[kRanks];
  for (int rank = 0; rank < kRanks; ++rank) {
    children[rank] = fork();
    if (children[rank] == 0) {
      const auto code = run_rank(rank, id_pipe);
      std::fflush(stdout);
      _exit(code == WHOLEMEMORY_SUCCESS ? 0 : 10 + code);
    }
  }
  close(id_pipe[0]);
  close(id_pipe[1]);
  int failures = 0;
  for (int rank = 0; rank < kRanks; ++rank) {
    int status = 0;
    waitpid(children[rank], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "rank %d failed (status %d)\n", rank, status);
      ++failures;
    }
  }
  std::printf(
      failures == 0 ? "wholememory_hello: all %d ranks agree\n" : "wholememory_hello: FAILED\n",
      kRanks);
  return failures == 0 ? 0 : 1;
}
