#include "src/core/shared_segments.h"

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>

#include "memloom/error.h"
#include "src/core/platform_loader.h"

namespace memloom::core {
namespace {

// Every rank learns every rank's outcome of a local step, so all ranks fail together (no rank is
// left waiting in a later collective for a peer that already gave up).
struct Outcome {
  int32_t status = 0;  // a Status value; 0 = success
  char message[220] = {};
};

void agree_on_outcome(Group& group, const Outcome& mine, const std::string& step,
                      Deadline deadline) {
  std::vector<Outcome> all(group.size());
  group.collectives().allgather(&mine, all.data(), sizeof(Outcome), deadline);
  for (int r = 0; r < group.size(); ++r) {
    if (all[r].status == 0) continue;
    auto status = static_cast<Status>(all[r].status);
    if (r == group.rank()) raise(status, std::string(mine.message));
    raise(status, step + " failed on rank " + std::to_string(r) + ": " +
                      std::string(all[r].message, strnlen(all[r].message, sizeof(all[r].message))));
  }
}

Outcome outcome_of(const Error& error) {
  Outcome outcome;
  outcome.status = static_cast<int32_t>(error.status());
  std::strncpy(outcome.message, error.what(), sizeof(outcome.message) - 1);
  return outcome;
}

}  // namespace

SegmentSet exchange_segments(Group& group, hal::MemoryKind kind, int device, size_t my_size,
                             Deadline deadline) {
  auto& domain = platform().memory_domain();
  SegmentSet set;
  set.segments.resize(group.size());
  set.sizes.resize(group.size());

  uint64_t size64 = my_size;
  std::vector<uint64_t> sizes(group.size());
  group.collectives().allgather(&size64, sizes.data(), sizeof(uint64_t), deadline);
  for (int r = 0; r < group.size(); ++r) set.sizes[r] = sizes[r];

  // Allocate and export my own segment. The published fd is withdrawn however this function ends:
  // after every peer imported it, or when any step fails (a peer dying mid-exchange must not leave
  // the fd broker holding the segment open for the rest of the process).
  Outcome mine;
  std::string my_token, my_descriptor;
  struct WithdrawToken {
    Group& group;
    const std::string& token;
    ~WithdrawToken() {
      if (!token.empty()) group.bootstrap().withdraw_fd(token);
    }
  } withdraw{group, my_token};
  try {
    if (my_size % domain.granularity(kind) != 0) {
      raise(Status::kInvalidInput, "segment size " + std::to_string(my_size) +
                                       " is not a multiple of the granularity " +
                                       std::to_string(domain.granularity(kind)));
    }
    if (my_size > 0) {
      set.segments[group.rank()] = domain.allocate(kind, device, my_size);
      hal::ExportedSegment exported = domain.export_segment(*set.segments[group.rank()]);
      my_descriptor.assign(exported.descriptor.begin(), exported.descriptor.end());
      if (exported.fd >= 0) {
        my_token = group.bootstrap().publish_fd(exported.fd);
        ::close(exported.fd);
      }
    }
  } catch (const Error& error) {
    mine = outcome_of(error);
  }
  agree_on_outcome(group, mine, "allocation", deadline);

  // Share descriptors; import those of same-node peers.
  std::string packed = std::to_string(my_descriptor.size()) + ":" + my_descriptor + my_token;
  auto all = group.allgather_strings(packed, deadline);
  Outcome imported;
  try {
    for (int r = 0; r < group.size(); ++r) {
      if (r == group.rank() || set.sizes[r] == 0 || !group.same_node(r, group.rank())) continue;
      const std::string& entry = all[r];
      size_t colon = entry.find(':');
      size_t length = std::stoull(entry.substr(0, colon));
      hal::ExportedSegment exported;
      exported.descriptor.assign(entry.begin() + colon + 1, entry.begin() + colon + 1 + length);
      std::string token = entry.substr(colon + 1 + length);
      if (!token.empty()) exported.fd = group.bootstrap().fetch_fd(token, deadline);
      set.segments[r] = domain.import_segment(std::move(exported));
    }
  } catch (const Error& error) {
    imported = outcome_of(error);
  }
  // Everyone has imported (or failed) once this returns, so the fd can be withdrawn.
  agree_on_outcome(group, imported, "segment import", deadline);
  return set;
}

std::unique_ptr<hal::VaRange> reserve_common_range(Group& group, hal::MemoryKind kind, size_t size,
                                                   Deadline deadline) {
  auto& domain = platform().memory_domain();
  const size_t alignment = size_t(1) << 30;  // candidates on 1 GiB boundaries
  std::mt19937_64 random(std::random_device{}() ^ static_cast<uint64_t>(::getpid()));
  std::string last_error;
  for (int attempt = 0; attempt < 64; ++attempt) {
    // Even attempts: rank 0 draws a candidate in the middle of the 47-bit user address space, away
    // from the heap (low) and from mmap's default top-down area (high), where forked processes
    // often differ. Odd attempts: a rank (each in turn) lets its backend place the range and
    // proposes that address, for processes whose layouts the random draws keep missing (or a
    // backend that refuses addresses it did not choose).
    const bool proposed = attempt % 2 == 1;
    const int proposer = proposed ? (attempt / 2) % group.size() : 0;
    std::unique_ptr<hal::VaRange> range;
    uint64_t candidate = 0;
    int32_t ok = 1;
    if (group.rank() == proposer) {
      if (proposed) {
        try {
          range = domain.reserve_for(kind, size, nullptr);
          candidate = reinterpret_cast<uintptr_t>(range->base());
        } catch (const Error& error) {
          last_error = error.what();  // candidate 0: nobody tries this round
        }
      } else {
        const uint64_t low = 0x100000000000ull, high = 0x600000000000ull;
        uint64_t slots = (high - low - size) / alignment;
        candidate = low + (random() % (slots == 0 ? 1 : slots)) * alignment;
      }
    }
    group.collectives().broadcast(&candidate, sizeof(candidate), proposer, deadline);
    if (candidate == 0) {
      ok = 0;
    } else if (range == nullptr) {
      try {
        range = domain.reserve_for(kind, size, reinterpret_cast<void*>(candidate));
      } catch (const Error& error) {
        last_error = error.what();
        ok = error.status() == Status::kNotSupported ? 0 : -1;  // -1: retrying cannot fix it
      }
    }
    std::vector<int32_t> oks(group.size());
    group.collectives().allgather(&ok, oks.data(), sizeof(ok), deadline);
    bool all_ok = true;
    for (int r = 0; r < group.size(); ++r) {
      if (oks[r] < 0) {
        raise(Status::kSystem, "reserving " + std::to_string(size) +
                                   " bytes of address space failed on rank " + std::to_string(r) +
                                   (r == group.rank() ? ": " + last_error : ""));
      }
      all_ok = all_ok && oks[r] == 1;
    }
    if (all_ok) return range;
  }
  raise(Status::kNotSupported,
        "no virtual address range of " + std::to_string(size) +
            " bytes is free in every process of the group (last: " + last_error + ")");
}

}  // namespace memloom::core
