// Data collectives among the members of one node, through the chunk areas of a ShmGroup. Each
// moves data in rounds of at most one chunk per member (one barrier per round), so any size
// works with a region of a few MiB. The caller has already checked that the arguments agree, so
// every member computes the same number of rounds.
#pragma once

#include <vector>

#include "hw/host/byte_spans.h"
#include "hw/host/shm_group.h"
#include "memloom/deadline.h"

namespace memloom::host {

// Copies the stream `segments` of member `root` into the `segments` of every other member (the
// totals are equal on all members).
void shm_broadcast(ShmGroup& group, const std::vector<ByteSpan>& segments, int root,
                   Deadline deadline);

// Member m contributes counts[m] bytes; every member receives them at recv[m]. `send` is this
// member's piece (counts[local_index] bytes).
void shm_allgatherv(ShmGroup& group, const std::byte* send, const std::vector<size_t>& counts,
                    const std::vector<std::byte*>& recv, Deadline deadline);

// shm_allgatherv in one round whose barrier the caller runs: the collective agreement, which
// every call passes anyway, so a small allgather costs one barrier instead of two. Before that
// barrier each member stages its piece (counts[local_index] <= chunk_bytes); after it, each
// collects the others'. Every member must take this path alike (all counts <= chunk_bytes).
void shm_stage_piece(ShmGroup& group, const std::byte* send, size_t count);
void shm_collect_pieces(ShmGroup& group, const std::byte* send, const std::vector<size_t>& counts,
                        const std::vector<std::byte*>& recv);

// send[j]: what this member sends to member j; recv[i]: where member i's data for this member
// goes. max_pair_bytes: the largest count between two different members of the node.
void shm_alltoallv(ShmGroup& group, const std::vector<ConstByteSpan>& send,
                   const std::vector<ByteSpan>& recv, size_t max_pair_bytes, Deadline deadline);

}  // namespace memloom::host
