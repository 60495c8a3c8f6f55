// The header every rank contributes at the start of a collective call, and the check that all
// ranks called the same collective with agreeing arguments. Every rank (or every node leader)
// evaluates the same check over the same headers, so all of them reach the same verdict and
// fail together instead of corrupting data or hanging.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hw/hal/collectives.h"
#include "hw/host/shm_group.h"

namespace memloom::host {

enum class CollectiveOp : uint32_t {
  kCreate = 1,
  kBarrier,
  kBroadcast,
  kAllgather,
  kAllgatherv,
  kAlltoallv,
};

const char* collective_op_name(CollectiveOp op);

struct CollectiveHeader {
  explicit CollectiveHeader(CollectiveOp call = CollectiveOp::kBarrier) : op(call) {}

  CollectiveOp op;
  int32_t rank = 0;
  uint64_t seq = 0;         // how many collectives this rank called before
  uint64_t bytes = 0;       // broadcast / allgather size
  int64_t root = 0;         // broadcast root
  std::string local_error;  // an argument this rank alone can see is wrong ("" = none)
  // allgatherv: counts = recv_counts. alltoallv: counts = send_counts, counts2 = recv_counts.
  std::vector<uint64_t> counts;
  std::vector<uint64_t> counts2;

  // Fixed-size encoding for a group of `group_size` ranks (written into a shared-memory slot or
  // a message).
  static size_t encoded_bytes(int group_size);
  void encode(std::byte* out, int group_size) const;
  static CollectiveHeader decode(const std::byte* in, int group_size);
};

// The bytes `call` reads from its send buffer and writes into its receive buffer on `rank` of a
// group of `size` (0 where the counts or displacements it needs are null: the header then carries
// the error). Broadcast reads on the root and writes on every other rank.
size_t send_extent(const hal::CollectiveCall& call, int rank, int size);
size_t recv_extent(const hal::CollectiveCall& call, int rank, int size);

// The header `rank` contributes for `call`: its operation, sizes, root and counts, and the local
// error when a buffer or array the call needs is null.
CollectiveHeader header_for(const hal::CollectiveCall& call, int rank, int size);

// The common case of check_agreement, read straight from the node's encoded headers (the
// group's read_header areas) without decoding them: true when every member called the same
// barrier, creation, allgather or broadcast (same op and seq, same bytes and root, the root inside
// the group of `group_size`), with no local error and no counts. False means "not known": decode
// the headers and ask check_agreement.
bool headers_trivially_agree(const ShmGroup& group, int group_size);

// headers[r] is rank r's header (all ranks of the group). ok=false carries a message naming the
// first disagreement.
ShmVerdict check_agreement(const std::vector<CollectiveHeader>& headers);

}  // namespace memloom::host
