#include "src/smem/trans/direct_path.h"

#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "memloom/error.h"
#include "src/smem/trans/transfer_piece.h"

namespace memloom::smem::trans {
namespace {

constexpr size_t kMaxWindowPieces = 1024;
constexpr uint64_t kMaxWindowBytes = 64ull << 20;

}  // namespace

struct DirectPath::Mapping {
  uint64_t generation = 0;
  void* base = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (base != nullptr) ::munmap(base, size);
  }
};

DirectPath::DirectPath(std::string peer_name, pid_t pid, int table_fd)
    : peer_name_(std::move(peer_name)), pid_(pid), view_(table_fd), process_(peer_name_, pid) {}

DirectPath::~DirectPath() = default;

bool DirectPath::alive() const {
  return !view_.closed() && !process_.exited();
}

std::shared_ptr<DirectPath::Mapping> DirectPath::mapping_for(const RegionRef& region,
                                                             Deadline deadline) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = mappings_.find(region.slot);
  if (it != mappings_.end() && it->second->generation == region.generation) return it->second;
  base::UniqueFd fd(fetch_region_fd(region, peer_name_, deadline));
  auto mapping = std::make_shared<Mapping>();
  void* base = ::mmap(nullptr, region.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (base == MAP_FAILED) raise_errno("mapping memory of peer '" + peer_name_ + "'", errno);
  mapping->generation = region.generation;
  mapping->base = base;
  mapping->size = region.size;
  mappings_[region.slot] = mapping;
  return mapping;
}

void DirectPath::forget_stale_mappings(const RegionSnapshot& snapshot) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (snapshot.version == mappings_version_) return;
  mappings_version_ = snapshot.version;
  for (auto it = mappings_.begin(); it != mappings_.end();) {
    // Copies in flight keep their own reference; the memory is unmapped after the last one.
    it = snapshot.holds(it->first, it->second->generation) ? std::next(it) : mappings_.erase(it);
  }
}

DirectPath::Outcome DirectPath::run(Direction direction, const std::vector<Piece>& pieces,
                                    Deadline deadline) {
  if (!alive())
    raise(Status::kCommunication, "peer '" + peer_name_ + "' has exited or was destroyed");
  auto snapshot = view_.snapshot();
  forget_stale_mappings(*snapshot);
  const std::vector<const RegionRef*> region_of = snapshot->regions_of(pieces, peer_name_);
  for (const RegionRef* region : region_of) {
    if (region->kind == RegionKind::kDeviceExport || region->kind == RegionKind::kDeviceOpaque)
      return Outcome::kUnavailable;
  }
  std::vector<iovec> local;
  std::vector<iovec> remote;
  std::vector<const RegionRef*> window_regions;
  for (size_t begin = 0; begin < pieces.size();) {
    const size_t end = window_end(pieces, begin, kMaxWindowPieces, kMaxWindowBytes);
    window_regions.assign(region_of.begin() + begin, region_of.begin() + end);
    // Mappings are taken before the hold: fetching an fd waits on the peer, a hold must not.
    std::vector<std::shared_ptr<Mapping>> mapped(end - begin);
    for (size_t i = begin; i < end; ++i) {
      if (region_of[i]->kind == RegionKind::kMemfd)
        mapped[i - begin] = mapping_for(*region_of[i], deadline);
    }
    local.clear();
    remote.clear();
    {
      RegionHolds holds(view_.slots(), window_regions);
      if (!holds.acquired()) {
        raise(Status::kInvalidInput,
              "a region of '" + peer_name_ + "' was deregistered during the transfer");
      }
      for (size_t i = begin; i < end; ++i) {
        const Piece& piece = pieces[i];
        if (const auto& mapping = mapped[i - begin]) {
          char* there = static_cast<char*>(mapping->base) + (piece.remote - region_of[i]->address);
          if (direction == Direction::kWrite) {
            std::memcpy(there, piece.local, piece.bytes);
          } else {
            std::memcpy(piece.local, there, piece.bytes);
          }
        } else {
          local.push_back(iovec{piece.local, piece.bytes});
          remote.push_back(
              iovec{reinterpret_cast<void*>(static_cast<uintptr_t>(piece.remote)), piece.bytes});
        }
      }
      if (!local.empty() && !cross_memory_copy(direction, local, remote))
        return Outcome::kCrossMemoryDenied;
    }
    begin = end;
  }
  // A peer that died mid-copy may leave memory nobody will read: report it like a broken link.
  if (!alive())
    raise(Status::kCommunication, "peer '" + peer_name_ + "' exited during the transfer");
  return Outcome::kDone;
}

bool DirectPath::cross_memory_copy(Direction direction, std::vector<iovec>& local,
                                   std::vector<iovec>& remote) {
  size_t expected = 0;
  for (const auto& io : local) expected += io.iov_len;
  ssize_t copied =
      direction == Direction::kWrite
          ? ::process_vm_writev(pid_, local.data(), local.size(), remote.data(), remote.size(), 0)
          : ::process_vm_readv(pid_, local.data(), local.size(), remote.data(), remote.size(), 0);
  if (copied < 0) {
    int error = errno;
    if (error == EPERM || error == ENOSYS) return false;  // ptrace policy, seccomp, or no CMA
    if (error == ESRCH) raise(Status::kCommunication, "peer '" + peer_name_ + "' has exited");
    if (error == EFAULT) {
      raise(Status::kInvalidInput, "a local buffer of the transfer is not mapped in this process");
    }
    raise(Status::kSystem, std::string("cross-memory copy with peer '") + peer_name_ +
                               "' failed: " + std::strerror(error));
  }
  if (static_cast<size_t>(copied) != expected) {
    raise(Status::kInvalidInput, "copied " + std::to_string(copied) + " of " +
                                     std::to_string(expected) +
                                     " bytes: a local buffer, or memory registered by '" +
                                     peer_name_ + "', is not mapped");
  }
  return true;
}

}  // namespace memloom::smem::trans
