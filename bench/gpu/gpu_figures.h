// The measurements of memloom-bench-gpu, each run in forked ranks (bench/bench_ranks.h) so the
// parent never initialises CUDA and can fork every job. A rank returns seconds per operation
// under the names below; the parent turns them into bandwidths, ceilings and ratios.
#pragma once

#include <cstddef>
#include <cstdint>

#include "bench/bench_ranks.h"
#include "wholememory/wholememory.h"

namespace memloom::bench::gpu {

constexpr size_t kMiB = size_t(1) << 20;
constexpr size_t kD2DBytes = size_t(1) << 30;  // the device-to-device ceiling's buffer
constexpr size_t kCopyBytes = 64 * kMiB;       // peer copies: ceilings, SHM, BM, TRANS
constexpr size_t kRowBytes = 512;              // 128 floats
constexpr size_t kRowFloats = kRowBytes / sizeof(float);
constexpr size_t kGatherRows = size_t(1) << 20;  // rows each rank gathers
constexpr size_t kTableRows = size_t(4) << 20;   // 2 GiB table (1 GiB per GPU over two)
constexpr size_t kApplyRows = size_t(1) << 20;   // embedding rows of the apply figure

// {"devices": count}; throws when CUDA sees no device.
Figures probe_rank(const RankInfo& info);

// "d2d", "peer copy", "peer read": seconds per copy of kD2DBytes (GPU 0 to GPU 0) and of
// kCopyBytes GPU 0 to GPU 1 and GPU 1 to GPU 0 (the last two only with two GPUs).
Figures ceilings_rank(const RankInfo& info);

// "gather": seconds of one wholememory_gather of kGatherRows rows on one rank (GPU 0).
Figures local_gather_rank(const RankInfo& info);

// "gather rank R": seconds of rank R's gather from a table of `type` over all ranks (one GPU
// each), every rank gathering at once.
Figures spread_gather_rank(const RankInfo& info, wholememory_memory_type_t type);
// "gather rank 0": the same with rank 0 gathering alone (the other ranks hold their part of the
// table and stay idle), so NVLink carries reads one way only. Not for DISTRIBUTED (collective).
Figures rank_zero_gather_rank(const RankInfo& info, wholememory_memory_type_t type);
// "gather rank R": every rank gathering at once, each rank an emulated node of its own on GPU R
// (a job of as many nodes as ranks), as HIERARCHY spans nodes.
Figures node_per_gpu_gather_rank(const RankInfo& info, wholememory_memory_type_t type);

// "apply": seconds of one wholememory_embedding_gather_gradient_apply (lazy Adam) of every row
// of a kApplyRows x kRowFloats FLOAT embedding on GPU 0 (gpu_embedding.cpp); "apply no row": the
// same call with every index -1; "apply one row": with a single index.
Figures embedding_apply_rank(const RankInfo& info);
// The same apply with the CUDA module's phase timing on (MEMLOOM_CUDA_PHASE_TIMES=1): "call",
// seconds per call, and "phase NAME", the GPU seconds per call of each kernel, copy or step.
Figures embedding_phases_rank(const RankInfo& info);

// "sample", "sample reference": seconds of one unweighted sampling (fanout 30, 1M centres) of a
// power-law graph of about `edges` edges on GPU 0, by memloom and by the bench's plain CUDA
// sampler; "sampled edges", "graph edges": the counts (gpu_sampling.cpp).
Figures sampling_rank(const RankInfo& info, int64_t edges);

// "put", "get": rank 0's copies of kCopyBytes to / from rank 1's SHM slot (GPU 1).
Figures shm_rank(const RankInfo& info);

// "put", "get": smem_bm_copy L2G / G2L of kCopyBytes between rank 0's GPU memory and rank 1's
// device slot.
Figures bm_rank(const RankInfo& info);

// "write", "read": smem_trans_*_submit of kCopyBytes from rank 0 (GPU 0) into / out of memory
// rank 1 registered on GPU 1; "write blocking", "read blocking": the synchronous calls.
Figures trans_rank(const RankInfo& info);

}  // namespace memloom::bench::gpu
