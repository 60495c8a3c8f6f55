// embedding_demo: an embedding table spread over the ranks of a job, read by random indices.
//
//   memloom-run -n 4 --nodes 2 -- build/bin/embedding_demo [rows] [dim] [lookups]
//   mpirun -np 4 build/bin/embedding_demo        torchrun --nproc-per-node 4 --no-python ...
//
// Every rank creates the same WholeMemory tensor: `rows` embeddings of `dim` floats. On one node
// it is CONTINUOUS (every rank maps the whole table); across nodes it is HIERARCHY (each node maps
// its own ranks' rows, and rows from other nodes travel over the network). Each rank writes its own
// rows with wholememory_scatter, then gathers `lookups` random rows (most of them held by other
// ranks), checks every value and reports the rate it reached.
//
// The program works under any launcher: memloom_get_launch_info reads the rank and world size from
// memloom-run's, torchrun's, Open MPI's or Slurm's variables, and
// memloom_wholememory_share_unique_id hands rank 0's unique id to the others through the job's
// config store (rank 0 serves one when the launcher runs none). At the end rank 0 gathers every
// rank's figures and prints one summary.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <memloom/launch.h>
#include <memloom/stream.h>
#include <wholememory/wholememory_op.h>

#include "../common/launched_rank.h"
#include "../common/wholememory_buffers.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The value stored at (row, column): every value is distinct and exact in a float.
float embedding_value(int64_t row, int64_t column) {
  return static_cast<float>(row % 100000) * 256.0f + static_cast<float>(column % 256);
}

// Memory for an operand: pinned host memory, which the host fills and reads and a GPU reaches.
using Pinned = memloom_examples::EnvMemory;

// A tensor over memory this process owns: 1-D int64 indices, or a rows x dim float matrix.
wholememory_tensor_t local_tensor(void* data, int64_t rows, int64_t dim) {
  wholememory_tensor_description_t desc = memloom_examples::packed_description(
      rows, dim, dim > 0 ? WHOLEMEMORY_DT_FLOAT : WHOLEMEMORY_DT_INT64);
  wholememory_tensor_t tensor = nullptr;
  if (wholememory_make_tensor_from_pointer(&tensor, data, &desc) != WHOLEMEMORY_SUCCESS) {
    return nullptr;
  }
  return tensor;
}

// A WholeMemory tensor of rows x columns floats spread over the communicator's ranks.
wholememory_error_code_t create_float_table(wholememory_tensor_t* table, int64_t rows,
                                            int64_t columns, wholememory_comm_t comm,
                                            wholememory_memory_type_t type,
                                            wholememory_memory_location_t location) {
  wholememory_tensor_description_t desc =
      memloom_examples::packed_description(rows, columns, WHOLEMEMORY_DT_FLOAT);
  return wholememory_create_tensor(table, &desc, comm, type, location);
}

#define DEMO_CHECK(call)                                          \
  do {                                                            \
    if (!(call)) {                                                \
      std::fprintf(stderr, "embedding_demo: %s failed\n", #call); \
      return 1;                                                   \
    }                                                             \
  } while (0)
#define DEMO_OK(call) DEMO_CHECK((call) == WHOLEMEMORY_SUCCESS)

// Figures each rank reports to rank 0, one float row per rank.
enum Figure { kMrowsPerSecond, kGigabytesPerSecond, kRemotePercent, kWrongValues, kFigures };

// Every rank scatters its row of figures into a small table and gathers all rows; rank 0 prints
// one line for the whole job.
int report(wholememory_comm_t comm, int rank, int world, int64_t lookups, const float* figures,
           memloom_stream_t stream) {
  wholememory_tensor_t table = nullptr;
  DEMO_OK(create_float_table(&table, world, kFigures, comm, WHOLEMEMORY_MT_DISTRIBUTED,
                             WHOLEMEMORY_ML_HOST));
  Pinned row_index(sizeof(int64_t)), row(kFigures * sizeof(float));
  row_index.as<int64_t>()[0] = rank;
  for (int f = 0; f < kFigures; ++f) row.as<float>()[f] = figures[f];
  wholememory_tensor_t index_tensor = local_tensor(row_index.as<void>(), 1, 0);
  wholememory_tensor_t row_tensor = local_tensor(row.as<void>(), 1, kFigures);
  DEMO_CHECK(index_tensor != nullptr && row_tensor != nullptr);
  DEMO_OK(wholememory_scatter(row_tensor, index_tensor, table, nullptr, stream));
  DEMO_CHECK(memloom_stream_synchronize(stream) == MEMLOOM_STATUS_SUCCESS);
  DEMO_OK(wholememory_communicator_barrier(comm));
  // Every rank gathers (a gather is collective on every memory type); rank 0 prints.
  Pinned all_index(world * sizeof(int64_t)), all(world * kFigures * sizeof(float));
  for (int r = 0; r < world; ++r) all_index.as<int64_t>()[r] = r;
  wholememory_tensor_t all_indices = local_tensor(all_index.as<void>(), world, 0);
  wholememory_tensor_t all_rows = local_tensor(all.as<void>(), world, kFigures);
  DEMO_CHECK(all_indices != nullptr && all_rows != nullptr);
  DEMO_OK(wholememory_gather(table, all_indices, all_rows, nullptr, stream));
  DEMO_CHECK(memloom_stream_synchronize(stream) == MEMLOOM_STATUS_SUCCESS);
  if (rank == 0) {
    double total_rate = 0, remote = 0, wrong = 0;
    float slowest = all.as<float>()[kMrowsPerSecond], fastest = slowest;
    for (int r = 0; r < world; ++r) {
      const float* f = all.as<float>() + r * kFigures;
      total_rate += f[kMrowsPerSecond];
      remote += f[kRemotePercent] / world;
      wrong += f[kWrongValues];
      slowest = f[kMrowsPerSecond] < slowest ? f[kMrowsPerSecond] : slowest;
      fastest = f[kMrowsPerSecond] > fastest ? f[kMrowsPerSecond] : fastest;
    }
    std::printf(
        "embedding_demo: %d ranks gathered %lld rows each (%.0f%% held by other ranks): "
        "%.2f Mrows/s in all (%.2f-%.2f per rank), %s\n",
        world, static_cast<long long>(lookups), remote, total_rate, slowest, fastest,
        wrong == 0 ? "every value checked" : "WRONG VALUES");
    std::fflush(stdout);
  }
  wholememory_destroy_tensor(all_indices);
  wholememory_destroy_tensor(all_rows);
  wholememory_destroy_tensor(index_tensor);
  wholememory_destroy_tensor(row_tensor);
  DEMO_OK(wholememory_communicator_barrier(comm));  // rank 0 has read the table
  DEMO_OK(wholememory_destroy_tensor(table));
  return 0;
}

int run(int rank, int world, int64_t rows, int64_t dim, int64_t lookups) {
  DEMO_OK(wholememory_init(0, LEVEL_WARN));
  wholememory_unique_id_t id{};
  DEMO_OK(memloom_wholememory_share_unique_id(&id, rank, world));
  wholememory_comm_t comm = nullptr;
  DEMO_OK(wholememory_create_communicator(&comm, id, rank, world));
  clique_info_t nodes{};
  DEMO_OK(wholememory_communicator_get_clique_info(&nodes, comm));
  const auto type = nodes.clique_num > 1 ? WHOLEMEMORY_MT_HIERARCHY : WHOLEMEMORY_MT_CONTINUOUS;

  wholememory_tensor_t table = nullptr;
  DEMO_OK(create_float_table(&table, rows, dim, comm, type, WHOLEMEMORY_ML_DEVICE));
  std::vector<size_t> offsets(world + 1);
  DEMO_OK(wholememory_tensor_get_entry_offsets(offsets.data(), table));
  const int64_t first = static_cast<int64_t>(offsets[rank]);
  const int64_t mine = static_cast<int64_t>(offsets[rank + 1]) - first;
  if (rank == 0) {
    std::printf("embedding_demo: %lld x %lld float table (%s over %d ranks on %d nodes)\n",
                static_cast<long long>(rows), static_cast<long long>(dim),
                type == WHOLEMEMORY_MT_HIERARCHY ? "HIERARCHY" : "CONTINUOUS", world,
                nodes.clique_num);
  }
  memloom_stream_t stream = nullptr;
  DEMO_CHECK(memloom_stream_create(&stream) == MEMLOOM_STATUS_SUCCESS);

  // Fill: every rank scatters the rows it holds.
  {
    Pinned indices(mine * sizeof(int64_t)), values(mine * dim * sizeof(float));
    for (int64_t i = 0; i < mine; ++i) {
      indices.as<int64_t>()[i] = first + i;
      for (int64_t c = 0; c < dim; ++c)
        values.as<float>()[i * dim + c] = embedding_value(first + i, c);
    }
    wholememory_tensor_t index_tensor = local_tensor(indices.as<void>(), mine, 0);
    wholememory_tensor_t value_tensor = local_tensor(values.as<void>(), mine, dim);
    DEMO_CHECK(index_tensor != nullptr && value_tensor != nullptr);
    DEMO_OK(wholememory_scatter(value_tensor, index_tensor, table, nullptr, stream));
    DEMO_CHECK(memloom_stream_synchronize(stream) == MEMLOOM_STATUS_SUCCESS);
    wholememory_destroy_tensor(index_tensor);
    wholememory_destroy_tensor(value_tensor);
  }
  DEMO_OK(wholememory_communicator_barrier(comm));

  // Gather random rows, most of them from other ranks.
  Pinned indices(lookups * sizeof(int64_t)), output(lookups * dim * sizeof(float));
  std::mt19937_64 random(rank * 7919 + 1);
  std::uniform_int_distribution<int64_t> pick(0, rows - 1);
  int64_t remote = 0;
  for (int64_t i = 0; i < lookups; ++i) {
    const int64_t row = pick(random);
    indices.as<int64_t>()[i] = row;
    remote += row < first || row >= first + mine;
  }
  wholememory_tensor_t index_tensor = local_tensor(indices.as<void>(), lookups, 0);
  wholememory_tensor_t output_tensor = local_tensor(output.as<void>(), lookups, dim);
  DEMO_CHECK(index_tensor != nullptr && output_tensor != nullptr);
  DEMO_OK(wholememory_gather(table, index_tensor, output_tensor, nullptr, stream));  // warm-up
  DEMO_CHECK(memloom_stream_synchronize(stream) == MEMLOOM_STATUS_SUCCESS);
  DEMO_OK(wholememory_communicator_barrier(comm));
  const auto start = std::chrono::steady_clock::now();
  DEMO_OK(wholememory_gather(table, index_tensor, output_tensor, nullptr, stream));
  DEMO_CHECK(memloom_stream_synchronize(stream) == MEMLOOM_STATUS_SUCCESS);
  const double elapsed = seconds_since(start);

  int64_t wrong = 0;
  for (int64_t i = 0; i < lookups; ++i) {
    const int64_t row = indices.as<int64_t>()[i];
    for (int64_t c = 0; c < dim; ++c) {
      wrong += output.as<float>()[i * dim + c] != embedding_value(row, c);
    }
  }
  const float figures[kFigures] = {static_cast<float>(lookups / elapsed / 1e6),
                                   static_cast<float>(lookups * dim * 4.0 / elapsed / 1e9),
                                   static_cast<float>(100.0 * remote / (lookups ? lookups : 1)),
                                   static_cast<float>(wrong)};
  if (report(comm, rank, world, lookups, figures, stream) != 0) return 1;

  wholememory_destroy_tensor(index_tensor);
  wholememory_destroy_tensor(output_tensor);
  memloom_stream_destroy(stream);
  DEMO_OK(wholememory_communicator_barrier(comm));
  DEMO_OK(wholememory_destroy_tensor(table));
  DEMO_OK(wholememory_finalize());
  return wrong == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const memloom_launch_info_t launch =
      memloom_examples::launch_info_or_exit(argv[0], "-n 4 --nodes 2", "[rows] [dim] [lookups]");
  const int rank = launch.rank, world = launch.world_size;
  const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 100000;
  const int64_t dim = argc > 2 ? std::atoll(argv[2]) : 128;
  const int64_t lookups = argc > 3 ? std::atoll(argv[3]) : 200000;
  if (rows < 1 || dim < 1 || lookups < 0) {
    std::fprintf(stderr, "embedding_demo: rows and dim must be positive, lookups not negative\n");
    return 2;
  }
  return run(rank, world, rows, dim, lookups);
}
