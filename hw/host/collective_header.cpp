#include "hw/host/collective_header.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <sstream>

#include "memloom/error.h"

namespace memloom::host {
namespace {

constexpr size_t kLocalErrorBytes = 120;

// Encoded: | fixed (48 B) | counts (8 B x group size) | counts2 (same) | local error |. The
// fixed part of a header fits in one cache line with the group's arrival flag in front of it;
// the counts and the error are written and read only when present, so a barrier or an allgather
// moves one line per member.
struct EncodedFixed {
  uint32_t op;
  int32_t rank;
  uint64_t seq;
  uint64_t bytes;
  int64_t root;
  uint32_t counts;
  uint32_t counts2;
  uint32_t error_bytes;
  uint32_t reserved;
};
static_assert(sizeof(EncodedFixed) == 48);

template <typename T>
void put_field(std::byte* out, size_t offset, T value) {
  std::memcpy(out + offset, &value, sizeof(value));
}

std::string describe_call(const CollectiveHeader& h) {
  std::ostringstream out;
  out << "rank " << h.rank << " called " << collective_op_name(h.op) << " #" << h.seq;
  return out.str();
}

ShmVerdict disagree(const std::string& message) {
  return ShmVerdict{false, message};
}

ShmVerdict check_broadcast_or_allgather(const std::vector<CollectiveHeader>& headers) {
  const CollectiveHeader& first = headers.front();
  const bool broadcast = first.op == CollectiveOp::kBroadcast;
  const int64_t size = static_cast<int64_t>(headers.size());
  for (const auto& h : headers) {
    if (broadcast && (h.root < 0 || h.root >= size)) {
      return disagree("broadcast: rank " + std::to_string(h.rank) + " passed root " +
                      std::to_string(h.root) + ", outside the group of " + std::to_string(size));
    }
    if (h.bytes != first.bytes || (broadcast && h.root != first.root)) {
      std::ostringstream out;
      out << collective_op_name(first.op) << " arguments disagree: rank " << first.rank
          << " passed " << first.bytes << " bytes";
      if (broadcast) out << " from root " << first.root;
      out << " but rank " << h.rank << " passed " << h.bytes << " bytes";
      if (broadcast) out << " from root " << h.root;
      return disagree(out.str());
    }
  }
  return {};
}

ShmVerdict check_allgatherv(const std::vector<CollectiveHeader>& headers) {
  const CollectiveHeader& first = headers.front();
  for (const auto& h : headers) {
    for (size_t p = 0; p < headers.size(); ++p) {
      if (h.counts[p] != first.counts[p]) {
        return disagree("allgatherv counts disagree: rank " + std::to_string(first.rank) +
                        " expects " + std::to_string(first.counts[p]) + " bytes from rank " +
                        std::to_string(p) + " but rank " + std::to_string(h.rank) + " expects " +
                        std::to_string(h.counts[p]));
      }
    }
  }
  return {};
}

ShmVerdict check_alltoallv(const std::vector<CollectiveHeader>& headers) {
  for (size_t r = 0; r < headers.size(); ++r) {
    for (size_t p = 0; p < headers.size(); ++p) {
      uint64_t sent = headers[r].counts[p];
      uint64_t expected = headers[p].counts2[r];
      if (sent != expected) {
        return disagree("alltoallv counts disagree: rank " + std::to_string(r) + " sends " +
                        std::to_string(sent) + " bytes to rank " + std::to_string(p) +
                        " but rank " + std::to_string(p) + " expects " + std::to_string(expected) +
                        " bytes from rank " + std::to_string(r));
      }
    }
  }
  return {};
}

}  // namespace

namespace {

// The furthest byte a (counts, displacements) layout reaches; 0 when either array is null.
size_t layout_extent(const size_t* counts, const size_t* displs, int size) {
  if (counts == nullptr || displs == nullptr) return 0;
  size_t extent = 0;
  for (int r = 0; r < size; ++r) {
    if (counts[r] > 0) extent = std::max(extent, displs[r] + counts[r]);
  }
  return extent;
}

CollectiveOp op_of(hal::CollectiveKind kind) {
  switch (kind) {
    case hal::CollectiveKind::kBarrier:
      return CollectiveOp::kBarrier;
    case hal::CollectiveKind::kBroadcast:
      return CollectiveOp::kBroadcast;
    case hal::CollectiveKind::kAllgather:
      return CollectiveOp::kAllgather;
    case hal::CollectiveKind::kAllgatherv:
      return CollectiveOp::kAllgatherv;
    case hal::CollectiveKind::kAlltoallv:
      return CollectiveOp::kAlltoallv;
  }
  raise(Status::kInvalidInput,
        "unknown collective kind " + std::to_string(static_cast<uint32_t>(kind)));
}

}  // namespace

size_t send_extent(const hal::CollectiveCall& call, int rank, int size) {
  switch (call.kind) {
    case hal::CollectiveKind::kBroadcast:
      return rank == call.root ? call.bytes : 0;
    case hal::CollectiveKind::kAllgather:
      return call.bytes;
    case hal::CollectiveKind::kAllgatherv:
      return call.recv_counts != nullptr ? call.recv_counts[rank] : 0;
    case hal::CollectiveKind::kAlltoallv:
      return layout_extent(call.send_counts, call.send_displs, size);
    default:
      return 0;
  }
}

size_t recv_extent(const hal::CollectiveCall& call, int rank, int size) {
  switch (call.kind) {
    case hal::CollectiveKind::kBroadcast:
      return rank == call.root ? 0 : call.bytes;
    case hal::CollectiveKind::kAllgather:
      return call.bytes * static_cast<size_t>(size);
    case hal::CollectiveKind::kAllgatherv:
    case hal::CollectiveKind::kAlltoallv:
      return layout_extent(call.recv_counts, call.recv_displs, size);
    default:
      return 0;
  }
}

CollectiveHeader header_for(const hal::CollectiveCall& call, int rank, int size) {
  CollectiveHeader header(op_of(call.kind));
  switch (call.kind) {
    case hal::CollectiveKind::kBarrier:
      break;
    case hal::CollectiveKind::kBroadcast:
      header.bytes = call.bytes;
      header.root = call.root;
      if (call.bytes > 0 && call.recv == nullptr) header.local_error = "the buffer is null";
      break;
    case hal::CollectiveKind::kAllgather:
      header.bytes = call.bytes;
      if (call.bytes > 0 && (call.send == nullptr || call.recv == nullptr)) {
        header.local_error = "the send or receive buffer is null";
      }
      break;
    case hal::CollectiveKind::kAllgatherv:
      if (call.recv_counts == nullptr || call.recv_displs == nullptr) {
        header.local_error = "recv_counts or recv_displs is null";
        break;
      }
      header.counts.assign(call.recv_counts, call.recv_counts + size);
      break;
    case hal::CollectiveKind::kAlltoallv:
      if (!call.send_counts || !call.send_displs || !call.recv_counts || !call.recv_displs) {
        header.local_error = "a counts or displacements array is null";
        break;
      }
      // The counts travel in the header, which checks them pairwise on every rank.
      header.counts.assign(call.send_counts, call.send_counts + size);
      header.counts2.assign(call.recv_counts, call.recv_counts + size);
      break;
  }
  const bool vector_call =
      call.kind == hal::CollectiveKind::kAllgatherv || call.kind == hal::CollectiveKind::kAlltoallv;
  if (vector_call && header.local_error.empty()) {
    if (send_extent(call, rank, size) > 0 && call.send == nullptr) {
      header.local_error = "the send buffer is null";
    }
    if (recv_extent(call, rank, size) > 0 && call.recv == nullptr) {
      header.local_error = "the receive buffer is null";
    }
  }
  return header;
}

const char* collective_op_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kCreate:
      return "group creation";
    case CollectiveOp::kBarrier:
      return "barrier";
    case CollectiveOp::kBroadcast:
      return "broadcast";
    case CollectiveOp::kAllgather:
      return "allgather";
    case CollectiveOp::kAllgatherv:
      return "allgatherv";
    case CollectiveOp::kAlltoallv:
      return "alltoallv";
  }
  return "unknown collective";
}

size_t CollectiveHeader::encoded_bytes(int group_size) {
  return sizeof(EncodedFixed) + 2 * sizeof(uint64_t) * static_cast<size_t>(group_size) +
         kLocalErrorBytes;
}

void CollectiveHeader::encode(std::byte* out, int group_size) const {
  const size_t n = static_cast<size_t>(group_size);
  if (counts.size() > n || counts2.size() > n) {
    raise(Status::kLogic, "collective header carries more counts than the group has ranks");
  }
  EncodedFixed fixed;
  fixed.op = static_cast<uint32_t>(op);
  fixed.rank = rank;
  fixed.seq = seq;
  fixed.bytes = bytes;
  fixed.root = root;
  fixed.counts = static_cast<uint32_t>(counts.size());
  fixed.counts2 = static_cast<uint32_t>(counts2.size());
  fixed.error_bytes = static_cast<uint32_t>(std::min(local_error.size(), kLocalErrorBytes));
  fixed.reserved = 0;
  // Field by field into the (shared) header: no partial-store-then-wide-load of a stack copy,
  // which stalls store forwarding on every barrier.
  put_field(out, offsetof(EncodedFixed, op), fixed.op);
  put_field(out, offsetof(EncodedFixed, rank), fixed.rank);
  put_field(out, offsetof(EncodedFixed, seq), fixed.seq);
  put_field(out, offsetof(EncodedFixed, bytes), fixed.bytes);
  put_field(out, offsetof(EncodedFixed, root), fixed.root);
  put_field(out, offsetof(EncodedFixed, counts), fixed.counts);
  put_field(out, offsetof(EncodedFixed, counts2), fixed.counts2);
  put_field(out, offsetof(EncodedFixed, error_bytes), fixed.error_bytes);
  put_field(out, offsetof(EncodedFixed, reserved), fixed.reserved);
  std::byte* tail = out + sizeof(fixed);
  if (!counts.empty()) std::memcpy(tail, counts.data(), counts.size() * sizeof(uint64_t));
  if (!counts2.empty()) {
    std::memcpy(tail + n * sizeof(uint64_t), counts2.data(), counts2.size() * sizeof(uint64_t));
  }
  if (fixed.error_bytes > 0) {
    std::memcpy(tail + 2 * n * sizeof(uint64_t), local_error.data(), fixed.error_bytes);
  }
}

CollectiveHeader CollectiveHeader::decode(const std::byte* in, int group_size) {
  const size_t n = static_cast<size_t>(group_size);
  EncodedFixed fixed;
  std::memcpy(&fixed, in, sizeof(fixed));
  if (fixed.counts > n || fixed.counts2 > n || fixed.error_bytes > kLocalErrorBytes) {
    raise(Status::kCommunication,
          "malformed collective header (counts beyond the group size or an overlong error)");
  }
  CollectiveHeader h;
  h.op = static_cast<CollectiveOp>(fixed.op);
  h.rank = fixed.rank;
  h.seq = fixed.seq;
  h.bytes = fixed.bytes;
  h.root = fixed.root;
  const std::byte* tail = in + sizeof(fixed);
  if (fixed.error_bytes > 0) {
    h.local_error.assign(reinterpret_cast<const char*>(tail + 2 * n * sizeof(uint64_t)),
                         fixed.error_bytes);
  }
  h.counts.resize(fixed.counts);
  h.counts2.resize(fixed.counts2);
  if (fixed.counts > 0) std::memcpy(h.counts.data(), tail, fixed.counts * sizeof(uint64_t));
  if (fixed.counts2 > 0) {
    std::memcpy(h.counts2.data(), tail + n * sizeof(uint64_t), fixed.counts2 * sizeof(uint64_t));
  }
  return h;
}

bool headers_trivially_agree(const ShmGroup& group, int group_size) {
  EncodedFixed first;
  std::memcpy(&first, group.read_header(0), sizeof(first));
  switch (static_cast<CollectiveOp>(first.op)) {
    case CollectiveOp::kCreate:
    case CollectiveOp::kBarrier:
    case CollectiveOp::kAllgather:
      break;
    case CollectiveOp::kBroadcast:
      if (first.root < 0 || first.root >= group_size) return false;
      break;
    default:
      return false;
  }
  if (first.error_bytes != 0 || first.counts != 0 || first.counts2 != 0) return false;
  for (int m = 1; m < group.local_size(); ++m) {
    EncodedFixed other;
    std::memcpy(&other, group.read_header(m), sizeof(other));
    if (other.op != first.op || other.seq != first.seq || other.bytes != first.bytes ||
        other.root != first.root || other.error_bytes != 0 || other.counts != 0 ||
        other.counts2 != 0) {
      return false;
    }
  }
  return true;
}

ShmVerdict check_agreement(const std::vector<CollectiveHeader>& headers) {
  if (headers.empty()) return {};
  const CollectiveHeader& first = headers.front();
  for (const auto& h : headers) {
    if (h.op != first.op || h.seq != first.seq) {
      return disagree("ranks are out of step: " + describe_call(first) + " but " +
                      describe_call(h));
    }
  }
  for (const auto& h : headers) {
    if (!h.local_error.empty()) {
      return disagree(std::string(collective_op_name(h.op)) + ": rank " + std::to_string(h.rank) +
                      " passed invalid arguments: " + h.local_error);
    }
  }
  const size_t n = headers.size();
  switch (first.op) {
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kAllgather:
      return check_broadcast_or_allgather(headers);
    case CollectiveOp::kAllgatherv:
      for (const auto& h : headers) {
        if (h.counts.size() != n) return disagree("allgatherv header without counts");
      }
      return check_allgatherv(headers);
    case CollectiveOp::kAlltoallv:
      for (const auto& h : headers) {
        if (h.counts.size() != n || h.counts2.size() != n) {
          return disagree("alltoallv header without counts");
        }
      }
      return check_alltoallv(headers);
    default:
      return {};
  }
}

}  // namespace memloom::host
