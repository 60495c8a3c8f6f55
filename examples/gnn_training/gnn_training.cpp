// gnn_training: GraphSAGE-style training steps on WholeMemory, the C API only.
//
//   memloom-run -n 4 --nodes 2 -- build/bin/gnn_training [nodes] [steps] [batch]
//
// A synthetic graph of `nodes` nodes (default 1M), each with 8 neighbours of the same parity, is
// held once per node of the job in CONTINUOUS host memory (over a communicator of that node's
// ranks). The node features are a learnable WholeMemory embedding (16 floats a node, DISTRIBUTED
// over every rank, lazy Adam), the label of a node is its parity (+1 / -1). Each step, every rank:
// samples two hops of neighbours for its batch of target nodes (fanout 5, then 5), de-duplicates
// them with graph_append_unique, gathers their embeddings, runs the model (sage_model.h) forward
// and backward, applies the embedding's gradient with the sparse optimizer, averages the dense
// gradients over the ranks (through a WholeMemory tensor) and takes an SGD step. Rank 0 prints the
// loss of every step; the program fails unless the loss of the last step is below the first's.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <memloom/stream.h>
#include <wholememory/embedding.h>
#include <wholememory/graph_op.h>
#include <wholememory/wholegraph_op.h>
#include <wholememory/wholememory_op.h>

#include "../common/wholememory_buffers.h"
#include "sage_model.h"

namespace {

constexpr int kDegree = 8;
constexpr int kDim = 16;
constexpr int kHidden = 16;
constexpr int kFanout = 5;

#define GNN_OK(call)                                                                        \
  do {                                                                                      \
    if ((call) != WHOLEMEMORY_SUCCESS) {                                                    \
      std::fprintf(stderr, "gnn_training: %s failed (%s:%d)\n", #call, __FILE__, __LINE__); \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

int env_int(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? -1 : std::atoi(value);
}

void share_unique_id(int rank, const std::string& directory, wholememory_unique_id_t* id) {
  const std::string path = directory + "/gnn_training.id";
  if (rank == 0) {
    GNN_OK(wholememory_create_unique_id(id));
    const std::string partial = path + ".partial";
    std::ofstream(partial, std::ios::binary).write(id->internal, sizeof(id->internal));
    if (std::rename(partial.c_str(), path.c_str()) != 0) std::exit(1);
    return;
  }
  for (int tries = 0; tries < 3000; ++tries) {
    std::ifstream in(path, std::ios::binary);
    if (in.read(id->internal, sizeof(id->internal))) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::fprintf(stderr, "gnn_training: no unique id from rank 0\n");
  std::exit(1);
}

// Pinned host memory from the default environment: the host fills and reads it, a GPU reaches it.
// The example stops when there is none.
struct Pinned : memloom_examples::EnvMemory {
  explicit Pinned(size_t bytes) : EnvMemory(bytes) {
    if (data() == nullptr) std::exit(1);
  }
};

// Outputs of the graph operations, sized by them: pinned memory kept per output.
struct OutputSlot {
  std::unique_ptr<Pinned> memory;
  int64_t count = 0;
};

void* output_malloc(wholememory_tensor_description_t* desc, wholememory_memory_allocation_type_t,
                    void* memory_context, void*) {
  auto* slot = static_cast<OutputSlot*>(memory_context);
  slot->count = desc->sizes[0];
  slot->memory = std::make_unique<Pinned>(static_cast<size_t>(desc->sizes[0]) *
                                          wholememory_dtype_get_element_size(desc->dtype));
  return slot->memory->data();
}

void output_free(void* memory_context, void*) {
  static_cast<OutputSlot*>(memory_context)->memory.reset();
}

wholememory_env_func_t* environment() {
  static wholememory_env_func_t env = [] {
    wholememory_env_func_t made = *get_default_env_func();
    made.output_fns = {output_malloc, output_free, nullptr};
    return made;
  }();
  return &env;
}

// A tensor over memory this process owns: 1-D of `dtype`, or rows x columns.
struct Local {
  Local(void* data, wholememory_dtype_t dtype, int64_t rows, int64_t columns = 0) {
    wholememory_tensor_description_t desc =
        memloom_examples::packed_description(rows, columns, dtype);
    GNN_OK(wholememory_make_tensor_from_pointer(&tensor, data, &desc));
  }
  ~Local() { wholememory_destroy_tensor(tensor); }
  Local(const Local&) = delete;
  Local& operator=(const Local&) = delete;
  wholememory_tensor_t tensor = nullptr;
};

// Neighbour k of node v: an even step away, so neighbours share the node's parity.
int32_t neighbour_of(int64_t v, int k, int64_t nodes) {
  const uint64_t mixed = (static_cast<uint64_t>(v) * 0x9e3779b97f4a7c15ull + k) >> 40;
  return static_cast<int32_t>((v + 2 * (1 + static_cast<int64_t>(mixed % (nodes / 2 - 1)))) %
                              nodes);
}

float label_of(int64_t v) {
  return v % 2 == 0 ? 1.0f : -1.0f;
}

// A 1-D CONTINUOUS host tensor over the node's ranks; each rank writes its own partition.
template <typename T, typename Value>
wholememory_tensor_t graph_array(wholememory_comm_t node_comm, int64_t count,
                                 wholememory_dtype_t dtype, Value value) {
  wholememory_tensor_description_t desc = memloom_examples::packed_description(count, 0, dtype);
  wholememory_tensor_t tensor = nullptr;
  GNN_OK(wholememory_create_tensor(&tensor, &desc, node_comm, WHOLEMEMORY_MT_CONTINUOUS,
                                   WHOLEMEMORY_ML_HOST));
  wholememory_tensor_t local = nullptr;
  GNN_OK(wholememory_tensor_map_local_tensor(tensor, &local));
  size_t start = 0, entries = 0;
  GNN_OK(wholememory_tensor_get_local_entry_start(&start, tensor));
  GNN_OK(wholememory_tensor_get_local_entry_count(&entries, tensor));
  auto* data = static_cast<T*>(wholememory_tensor_get_data_pointer(local));
  for (size_t i = 0; i < entries; ++i) data[i] = value(static_cast<int64_t>(start + i));
  wholememory_destroy_tensor(local);
  GNN_OK(wholememory_communicator_barrier(node_comm));
  return tensor;
}

struct Hop {
  gnn::Neighbourhood hood;
  std::vector<int64_t> unique;  // the input nodes, then the new neighbours
};

// Samples kFanout neighbours of `nodes` and appends the new ones.
Hop sample_hop(wholememory_tensor_t row_ptr, wholememory_tensor_t col,
               const std::vector<int64_t>& nodes, unsigned long long seed) {
  const auto count = static_cast<int64_t>(nodes.size());
  Pinned centres(nodes.size() * sizeof(int64_t)), offsets((nodes.size() + 1) * sizeof(int32_t));
  std::memcpy(centres.data(), nodes.data(), nodes.size() * sizeof(int64_t));
  Local centre_tensor(centres.data(), WHOLEMEMORY_DT_INT64, count);
  Local offset_tensor(offsets.data(), WHOLEMEMORY_DT_INT, count + 1);
  OutputSlot sampled;
  GNN_OK(wholegraph_csr_unweighted_sample_without_replacement(
      row_ptr, col, centre_tensor.tensor, kFanout, offset_tensor.tensor, &sampled, nullptr, nullptr,
      seed, environment(), nullptr));
  Hop hop;
  hop.hood.offsets.assign(offsets.as<int32_t>(), offsets.as<int32_t>() + count + 1);
  // graph_append_unique takes one dtype: the sampled INT nodes widened to INT64.
  Pinned wide(static_cast<size_t>(sampled.count) * sizeof(int64_t) + 8);
  for (int64_t k = 0; k < sampled.count; ++k) {
    wide.as<int64_t>()[k] = sampled.memory->as<int32_t>()[k];
  }
  Local neighbours(wide.data(), WHOLEMEMORY_DT_INT64, sampled.count);
  Pinned mapping(static_cast<size_t>(sampled.count) * sizeof(int32_t) + 4);
  Local mapping_tensor(mapping.data(), WHOLEMEMORY_DT_INT, sampled.count);
  OutputSlot unique;
  GNN_OK(graph_append_unique(centre_tensor.tensor, neighbours.tensor, &unique,
                             mapping_tensor.tensor, environment(), nullptr));
  hop.hood.position.assign(mapping.as<int32_t>(), mapping.as<int32_t>() + sampled.count);
  hop.unique.assign(unique.memory->as<int64_t>(), unique.memory->as<int64_t>() + unique.count);
  return hop;
}

// The mean over the ranks of every rank's `values`, through a DISTRIBUTED tensor of one row per
// rank (a scatter of my row, then a gather of all of them).
void average_over_ranks(wholememory_tensor_t rows, int rank, int world,
                        std::vector<float>* values) {
  const auto width = static_cast<int64_t>(values->size());
  Pinned mine(values->size() * sizeof(float)), all(values->size() * world * sizeof(float));
  Pinned my_index(sizeof(int64_t)), every(world * sizeof(int64_t));
  std::memcpy(mine.data(), values->data(), values->size() * sizeof(float));
  *my_index.as<int64_t>() = rank;
  for (int r = 0; r < world; ++r) every.as<int64_t>()[r] = r;
  Local mine_tensor(mine.data(), WHOLEMEMORY_DT_FLOAT, 1, width);
  Local all_tensor(all.data(), WHOLEMEMORY_DT_FLOAT, world, width);
  Local my_index_tensor(my_index.data(), WHOLEMEMORY_DT_INT64, 1);
  Local every_tensor(every.data(), WHOLEMEMORY_DT_INT64, world);
  GNN_OK(
      wholememory_scatter(mine_tensor.tensor, my_index_tensor.tensor, rows, nullptr, nullptr, -1));
  GNN_OK(wholememory_gather(rows, every_tensor.tensor, all_tensor.tensor, nullptr, nullptr, -1));
  for (int64_t c = 0; c < width; ++c) {
    float sum = 0;
    for (int r = 0; r < world; ++r) sum += all.as<float>()[r * width + c];
    (*values)[c] = sum / static_cast<float>(world);
  }
}

int run(int rank, int world, const char* runtime_dir, int64_t nodes, int steps, int batch) {
  GNN_OK(wholememory_init(0, LEVEL_WARN));
  wholememory_unique_id_t id{};
  share_unique_id(rank, runtime_dir, &id);
  wholememory_comm_t comm = nullptr;
  GNN_OK(wholememory_create_communicator(&comm, id, rank, world));
  clique_info_t clique{};
  GNN_OK(wholememory_communicator_get_clique_info(&clique, comm));
  wholememory_comm_t node_comm = nullptr;
  GNN_OK(wholememory_split_communicator(&node_comm, comm, clique.clique_id, clique.clique_rank));

  auto* row_ptr = graph_array<int64_t>(node_comm, nodes + 1, WHOLEMEMORY_DT_INT64,
                                       [](int64_t v) { return v * kDegree; });
  auto* col =
      graph_array<int32_t>(node_comm, nodes * kDegree, WHOLEMEMORY_DT_INT, [nodes](int64_t e) {
        return neighbour_of(e / kDegree, static_cast<int>(e % kDegree), nodes);
      });

  // The embedding: the node's parity in column 0, scaled down, plus a little noise elsewhere.
  wholememory_tensor_description_t desc =
      memloom_examples::packed_description(nodes, kDim, WHOLEMEMORY_DT_FLOAT);
  wholememory_embedding_t embedding = nullptr;
  GNN_OK(wholememory_create_embedding(&embedding, &desc, comm, WHOLEMEMORY_MT_DISTRIBUTED,
                                      WHOLEMEMORY_ML_HOST, nullptr));
  wholememory_embedding_optimizer_t adam = nullptr;
  GNN_OK(wholememory_create_embedding_optimizer(&adam, WHOLEMEMORY_OPT_LAZY_ADAM));
  GNN_OK(wholememory_embedding_set_optimizer(embedding, adam));
  {
    wholememory_tensor_t local = nullptr;
    GNN_OK(wholememory_tensor_map_local_tensor(
        wholememory_embedding_get_embedding_tensor(embedding), &local));
    size_t start = 0, entries = 0;
    auto* table = wholememory_embedding_get_embedding_tensor(embedding);
    GNN_OK(wholememory_tensor_get_local_entry_start(&start, table));
    GNN_OK(wholememory_tensor_get_local_entry_count(&entries, table));
    auto* data = static_cast<float*>(wholememory_tensor_get_data_pointer(local));
    for (size_t i = 0; i < entries; ++i) {
      const auto v = static_cast<int64_t>(start + i);
      for (int c = 0; c < kDim; ++c) {
        data[i * kDim + c] =
            (c == 0 ? 0.2f * label_of(v) : 0.0f) + 0.05f * std::sin(static_cast<float>(v * 31 + c));
      }
    }
    wholememory_destroy_tensor(local);
    GNN_OK(wholememory_communicator_barrier(comm));
  }

  gnn::Weights weights(kDim, kHidden);
  // A row per rank: its weight gradients and its loss.
  wholememory_tensor_description_t grad_desc = memloom_examples::packed_description(
      world, static_cast<int64_t>(weights.size()) + 1, WHOLEMEMORY_DT_FLOAT);
  wholememory_tensor_t gradient_rows = nullptr;
  GNN_OK(wholememory_create_tensor(&gradient_rows, &grad_desc, comm, WHOLEMEMORY_MT_DISTRIBUTED,
                                   WHOLEMEMORY_ML_HOST));

  std::mt19937_64 rng(1234 + rank);
  std::uniform_int_distribution<int64_t> pick(0, nodes - 1);
  double first_loss = 0, last_loss = 0;
  for (int step = 0; step < steps; ++step) {
    std::vector<int64_t> targets(static_cast<size_t>(batch));
    for (auto& t : targets) t = pick(rng);
    std::sort(targets.begin(), targets.end());
    targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
    const unsigned long long seed = 1000ull * step + rank;
    const Hop hop1 = sample_hop(row_ptr, col, targets, seed);
    const Hop hop2 = sample_hop(row_ptr, col, hop1.unique, seed + 7);

    const auto u2 = static_cast<int64_t>(hop2.unique.size());
    Pinned indices(hop2.unique.size() * sizeof(int64_t)), x(hop2.unique.size() * kDim * 4);
    std::memcpy(indices.data(), hop2.unique.data(), hop2.unique.size() * sizeof(int64_t));
    Local index_tensor(indices.data(), WHOLEMEMORY_DT_INT64, u2);
    Local x_tensor(x.data(), WHOLEMEMORY_DT_FLOAT, u2, kDim);
    GNN_OK(wholememory_embedding_gather(embedding, index_tensor.tensor, x_tensor.tensor, true,
                                        nullptr, 0));
    GNN_OK(memloom_stream_synchronize(nullptr) == MEMLOOM_STATUS_SUCCESS ? WHOLEMEMORY_SUCCESS
                                                                         : WHOLEMEMORY_LOGIC_ERROR);
    std::vector<float> features(x.as<float>(), x.as<float>() + u2 * kDim);
    std::vector<float> labels;
    for (int64_t t : targets) labels.push_back(label_of(t));

    const double batch_total = static_cast<double>(targets.size()) * world;
    auto result = gnn::forward_backward(weights, features, static_cast<int64_t>(hop1.unique.size()),
                                        hop1.hood, hop2.hood, labels, batch_total);
    // The embedding's gradient, through its sparse optimizer (collective).
    Pinned dx(result.dx.size() * sizeof(float));
    std::memcpy(dx.data(), result.dx.data(), result.dx.size() * sizeof(float));
    Local dx_tensor(dx.data(), WHOLEMEMORY_DT_FLOAT, u2, kDim);
    GNN_OK(wholememory_embedding_gather_gradient_apply(embedding, index_tensor.tensor,
                                                       dx_tensor.tensor, true, 0.05f, nullptr, 0));
    // The dense weights: gradients summed over ranks (each rank's is of the global mean loss).
    std::vector<float> dense = result.dweights;
    dense.push_back(static_cast<float>(result.loss_sum));
    average_over_ranks(gradient_rows, rank, world, &dense);
    const double loss = dense.back() * world / batch_total;
    dense.pop_back();
    auto parameters = weights.parameters();
    for (size_t i = 0; i < parameters.size(); ++i) *parameters[i] -= 0.25f * world * dense[i];
    if (step == 0) first_loss = loss;
    last_loss = loss;
    if (rank == 0) {
      std::printf("step %2d: loss %.4f (%zu targets, %lld nodes gathered per rank)\n", step, loss,
                  targets.size(), static_cast<long long>(u2));
      std::fflush(stdout);
    }
  }

  GNN_OK(wholememory_destroy_tensor(gradient_rows));
  GNN_OK(wholememory_destroy_embedding(embedding));
  wholememory_destroy_embedding_optimizer(adam);
  GNN_OK(wholememory_destroy_tensor(row_ptr));
  GNN_OK(wholememory_destroy_tensor(col));
  GNN_OK(wholememory_finalize());
  if (rank == 0) {
    std::printf("gnn_training: loss %.4f -> %.4f over %d steps: %s\n", first_loss, last_loss, steps,
                last_loss < first_loss ? "falls" : "DOES NOT FALL");
  }
  return last_loss < first_loss ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const int rank = env_int("MEMLOOM_RANK");
  const int world = env_int("MEMLOOM_WORLD_SIZE");
  const char* runtime_dir = std::getenv("MEMLOOM_RUNTIME_DIR");
  if (rank < 0 || world < 1 || runtime_dir == nullptr) {
    std::fprintf(stderr,
                 "run me with memloom-run: memloom-run -n 4 --nodes 2 -- %s [nodes] [steps] "
                 "[batch]\n",
                 argv[0]);
    return 2;
  }
  const int64_t nodes = argc > 1 ? std::atoll(argv[1]) : 1000000;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 20;
  const int batch = argc > 3 ? std::atoi(argv[3]) : 256;
  if (nodes < 8 || nodes % 2 != 0 || steps < 2 || batch < 1) {
    std::fprintf(stderr, "gnn_training: nodes must be even and >= 8, steps >= 2, batch >= 1\n");
    return 2;
  }
  return run(rank, world, runtime_dir, nodes, steps, batch);
}
