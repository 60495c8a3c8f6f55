#include "hw/host/shm_collectives.h"

#include <algorithm>
#include <cstring>

#include "memloom/error.h"

namespace memloom::host {
namespace {

size_t ceil_div(size_t a, size_t b) {
  return (a + b - 1) / b;
}

}  // namespace

void shm_broadcast(ShmGroup& group, const std::vector<ByteSpan>& segments, int root,
                   Deadline deadline) {
  const int members = group.local_size();
  const size_t total = total_bytes(segments);
  if (members == 1 || total == 0) return;
  // Only the root writes, so a round may fill the chunk areas of every member.
  const size_t chunk = group.chunk_bytes();
  const size_t per_round = chunk * static_cast<size_t>(members);
  const bool is_root = group.local_index() == root;
  ByteSpanCursor<ByteSpan> cursor(segments);
  for (size_t done = 0; done < total; done += per_round) {
    const size_t round = std::min(per_round, total - done);
    if (is_root) {
      for (int m = 0; m * chunk < round; ++m) {
        cursor.read(group.write_data(m), std::min(chunk, round - m * chunk));
      }
    }
    group.barrier(deadline);
    if (!is_root) {
      for (int m = 0; m * chunk < round; ++m) {
        cursor.write(group.read_data(m), std::min(chunk, round - m * chunk));
      }
    }
  }
}

void shm_allgatherv(ShmGroup& group, const std::byte* send, const std::vector<size_t>& counts,
                    const std::vector<std::byte*>& recv, Deadline deadline) {
  const int me = group.local_index();
  const int members = group.local_size();
  if (counts[me] > 0 && recv[me] != send) std::memmove(recv[me], send, counts[me]);
  if (members == 1) return;
  const size_t chunk = group.chunk_bytes();
  const size_t largest = *std::max_element(counts.begin(), counts.end());
  const size_t rounds = ceil_div(largest, chunk);
  for (size_t k = 0; k < rounds; ++k) {
    const size_t offset = k * chunk;
    if (offset < counts[me]) {
      std::memcpy(group.write_data(me), send + offset, std::min(chunk, counts[me] - offset));
    }
    group.barrier(deadline);
    for (int m = 0; m < members; ++m) {
      if (m == me || offset >= counts[m]) continue;
      std::memcpy(recv[m] + offset, group.read_data(m), std::min(chunk, counts[m] - offset));
    }
  }
}

void shm_stage_piece(ShmGroup& group, const std::byte* send, size_t count) {
  if (count > group.chunk_bytes()) {
    raise(Status::kLogic, "a staged allgather piece larger than the collective chunk");
  }
  if (count > 0 && group.local_size() > 1) {
    std::memcpy(group.write_data(group.local_index()), send, count);
  }
}

void shm_collect_pieces(ShmGroup& group, const std::byte* send, const std::vector<size_t>& counts,
                        const std::vector<std::byte*>& recv) {
  const int me = group.local_index();
  if (counts[me] > 0 && recv[me] != send) std::memmove(recv[me], send, counts[me]);
  for (int m = 0; m < group.local_size(); ++m) {
    if (m != me && counts[m] > 0) std::memcpy(recv[m], group.read_data(m), counts[m]);
  }
}

void shm_alltoallv(ShmGroup& group, const std::vector<ConstByteSpan>& send,
                   const std::vector<ByteSpan>& recv, size_t max_pair_bytes, Deadline deadline) {
  const int me = group.local_index();
  const int members = group.local_size();
  if (send[me].bytes > 0 && recv[me].data != send[me].data) {
    std::memmove(recv[me].data, send[me].data, send[me].bytes);
  }
  if (members == 1 || max_pair_bytes == 0) return;
  // Each member's chunk area is split into one lane per destination.
  const size_t lane = group.chunk_bytes() / static_cast<size_t>(members);
  const size_t rounds = ceil_div(max_pair_bytes, lane);
  for (size_t k = 0; k < rounds; ++k) {
    const size_t offset = k * lane;
    for (int j = 0; j < members; ++j) {
      if (j == me || offset >= send[j].bytes) continue;
      std::memcpy(group.write_data(me) + lane * j, send[j].data + offset,
                  std::min(lane, send[j].bytes - offset));
    }
    group.barrier(deadline);
    for (int i = 0; i < members; ++i) {
      if (i == me || offset >= recv[i].bytes) continue;
      std::memcpy(recv[i].data + offset, group.read_data(i) + lane * me,
                  std::min(lane, recv[i].bytes - offset));
    }
  }
}

}  // namespace memloom::host
