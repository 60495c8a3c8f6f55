#include "hw/cuda/cuda_sampling.h"

#include <algorithm>

#include "hw/cuda/cuda_check.h"

namespace memloom::cuda {
namespace {

constexpr unsigned kThreads = 256;
constexpr int kLanes = 32;
constexpr unsigned kFullMask = 0xffffffffu;

// Floyd's picks, one per lane: lane t (< k) owns position t of the centre's samples, i.e. the
// draw for j = degree - k + t. Each draw depends on nothing but (seed, centre, j), so the lanes
// draw at once; only "is my choice one of the earlier picks" is sequential, and pick q is final
// once picks 0..q-1 were compared against it. Step q broadcasts pick q and every later lane
// compares, which yields exactly SampleNeighboursKernel::pick_uniform's picks in the same order.
// The ranges are 32-bit when the degree fits, as the shuffles then move one register, not two.
template <typename Position>
__device__ Position floyd_pick(uint64_t seed, int64_t center, int64_t degree, int k,
                               unsigned lane) {
  const bool mine = static_cast<int>(lane) < k;
  const auto j = static_cast<Position>(degree - k + static_cast<int64_t>(lane));
  Position choice = 0;
  if (mine) {
    const uint64_t bits =
        kernels::counter_random(seed, static_cast<uint64_t>(center), static_cast<uint64_t>(j));
    choice = static_cast<Position>(bits % (static_cast<uint64_t>(j) + 1));
  }
  bool collided = false;
  for (int q = 0; q + 1 < k; ++q) {
    const Position pick = __shfl_sync(kFullMask, collided ? j : choice, q);
    collided = collided || (static_cast<int>(lane) > q && choice == pick);
  }
  return collided ? j : choice;
}

template <typename Value>
__device__ Value shuffle(Value value, int lane) {
  return __shfl_sync(kFullMask, value, lane);
}

// One lane's sample, between its column read and its writes.
struct Sample {
  bool valid;
  int64_t at;  // output position
  int64_t node;
  int64_t edge;
  int32_t center;  // the centre's position in the call
};

__device__ void write_held(const kernels::SampleArgs& args, const Sample& sample) {
  if (sample.valid) kernels::write_sample(args, sample.at, sample.node, sample.edge, sample.center);
}

// A warp per 32 consecutive centres. Lane t first reads centre t's offsets and row (32 reads in
// flight), then the warp takes the centres one by one, a lane per sample: the column reads of a
// centre that keeps all its edges and every centre's output writes are contiguous, where one
// thread per centre strides them across 32 cache lines per instruction; a warp never waits on one
// lane's Floyd loop while the others idle; and the picks stay in registers.
__global__ void __launch_bounds__(kThreads) sample_by_warps(kernels::SampleArgs args) {
  const unsigned lane = threadIdx.x % kLanes;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kLanes;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * blockDim.x / kLanes;
  Sample held{};
  for (int64_t first = warp * kLanes; first < args.center_count; first += warps * kLanes) {
    const int64_t i = first + lane;
    int32_t out = 0, k = 0;
    int64_t center = 0, start = 0, degree = 0;
    if (i < args.center_count) {
      out = args.offsets[i];
      k = args.offsets[i + 1] - out;
      if (k > 0) {
        center = kernels::center_at(args, i);
        start = kernels::load_integer(args.row_ptr, center);
        degree = kernels::load_integer(args.row_ptr, center + 1) - start;
      }
    }
    for (unsigned pending = __ballot_sync(kFullMask, k > 0); pending != 0; pending &= pending - 1) {
      const int q = __ffs(static_cast<int>(pending)) - 1;
      const int k_q = shuffle(k, q);
      const int64_t degree_q = shuffle(degree, q);
      int64_t position = lane;
      if (k_q != degree_q) {  // the same branch for the whole warp
        const int64_t center_q = shuffle(center, q);
        position = degree_q <= INT32_MAX
                       ? floyd_pick<uint32_t>(args.seed, center_q, degree_q, k_q, lane)
                       : static_cast<int64_t>(
                             floyd_pick<uint64_t>(args.seed, center_q, degree_q, k_q, lane));
      }
      const int64_t start_q = shuffle(start, q);
      const int32_t out_q = shuffle(out, q);
      // This centre's column read is issued before the previous centre's writes, so a warp keeps
      // two reads in flight instead of waiting out each one.
      const bool mine = static_cast<int>(lane) < k_q;
      const int64_t edge = start_q + position;
      const int64_t node = mine ? kernels::load_integer(args.col, edge) : 0;
      write_held(args, held);
      held = Sample{mine, static_cast<int64_t>(out_q) + lane, node, edge,
                    static_cast<int32_t>(first + q)};
    }
    write_held(args, held);
    held.valid = false;
  }
}

}  // namespace

bool samples_by_warps(const kernels::SampleArgs& args) {
  static_assert(kernels::kLocalPicks <= kLanes, "a lane per sample");
  return !args.weighted && args.max_samples > 0 && args.max_samples <= kernels::kLocalPicks;
}

void launch_sample_by_warps(const kernels::SampleArgs& args, cudaStream_t stream, int max_blocks) {
  const int64_t batches = (args.center_count + kLanes - 1) / kLanes;
  const int64_t wanted = (batches + kThreads / kLanes - 1) / (kThreads / kLanes);
  const auto blocks = static_cast<unsigned>(std::clamp<int64_t>(wanted, 1, max_blocks));
  sample_by_warps<<<blocks, kThreads, 0, stream>>>(args);
  check_cuda(cudaGetLastError(), "kernel launch (sample_by_warps)");
}

void load_sample_by_warps() {
  cudaFuncAttributes attributes{};
  check_cuda(cudaFuncGetAttributes(&attributes, sample_by_warps), "cudaFuncGetAttributes");
}

}  // namespace memloom::cuda
