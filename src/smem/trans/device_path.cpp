#include "src/smem/trans/device_path.h"

#include <unistd.h>

#include "memloom/error.h"
#include "src/base/log.h"

namespace memloom::smem::trans {
namespace {

// One stream wait per window: regions are held for one window's copies (the owner's
// deregistration waits for them), a few milliseconds of device-to-device copying at most.
constexpr size_t kMaxWindowPieces = 4096;
constexpr uint64_t kMaxWindowBytes = 1ull << 30;

}  // namespace

struct DevicePath::Import {
  uint64_t generation = 0;
  std::unique_ptr<hal::ImportedRange> range;
};

DevicePath::DevicePath(std::string peer_name, pid_t pid, int table_fd, hal::MemoryDomain& domain,
                       std::shared_ptr<StreamPool> streams)
    : peer_name_(std::move(peer_name)),
      same_process_(pid == ::getpid()),
      view_(table_fd),
      process_(peer_name_, pid),
      domain_(domain),
      streams_(std::move(streams)) {}

DevicePath::~DevicePath() = default;

bool DevicePath::alive() const {
  return !view_.closed() && !process_.exited();
}

std::shared_ptr<DevicePath::Import> DevicePath::import_for(const RegionRef& region,
                                                           Deadline deadline) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = imports_.find(region.slot);
  if (it != imports_.end() && it->second->generation == region.generation) return it->second;
  if (refused_.count({region.slot, region.generation}) != 0) return nullptr;
  hal::ExportedSegment exported;
  exported.descriptor = region.descriptor;
  if (!region.token.empty()) exported.fd = fetch_region_fd(region, peer_name_, deadline);
  try {
    auto import = std::make_shared<Import>();
    import->generation = region.generation;
    import->range = domain_.import_device_range(std::move(exported));
    if (import->range->size() < region.size) {
      raise(Status::kCommunication, "the import maps " + std::to_string(import->range->size()) +
                                        " of the region's " + std::to_string(region.size) +
                                        " bytes");
    }
    imports_[region.slot] = import;
    return import;
  } catch (const Error& error) {
    // The data server still reaches this memory: the transfer goes there, as it did before.
    if (!refusal_logged_) {
      refusal_logged_ = true;
      MEMLOOM_LOG(kInfo, "device memory of peer '" << peer_name_ << "' cannot be mapped here ("
                                                   << error.what() << "); using TCP for it");
    }
    refused_.insert({region.slot, region.generation});
    return nullptr;
  }
}

void DevicePath::forget_stale_imports(const RegionSnapshot& snapshot) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (snapshot.version == imports_version_) return;
  imports_version_ = snapshot.version;
  // Copies in flight keep their own reference; the memory is unmapped after the last one.
  for (auto it = imports_.begin(); it != imports_.end();) {
    it = snapshot.holds(it->first, it->second->generation) ? std::next(it) : imports_.erase(it);
  }
  for (auto it = refused_.begin(); it != refused_.end();) {
    it = snapshot.holds(it->first, it->second) ? std::next(it) : refused_.erase(it);
  }
}

DevicePath::Outcome DevicePath::run(Direction direction, const std::vector<Piece>& pieces,
                                    Deadline deadline) {
  if (!alive())
    raise(Status::kCommunication, "peer '" + peer_name_ + "' has exited or was destroyed");
  auto snapshot = view_.snapshot();
  forget_stale_imports(*snapshot);
  const std::vector<const RegionRef*> region_of = snapshot->regions_of(pieces, peer_name_);
  for (const RegionRef* region : region_of) {
    // Only memory the owner exported is device memory this path is meant for; the rest (host
    // memory of a CUDA process, anything of the emulated backend) keeps its usual path.
    if (region->kind != RegionKind::kDeviceExport) return Outcome::kUnavailable;
  }
  // Imports are made before any hold: fetching an fd waits on the peer, a hold must not.
  std::vector<std::shared_ptr<Import>> imports(pieces.size());
  if (!same_process_) {
    for (size_t i = 0; i < pieces.size(); ++i) {
      if (i > 0 && region_of[i] == region_of[i - 1]) {
        imports[i] = imports[i - 1];
        continue;
      }
      imports[i] = import_for(*region_of[i], deadline);
      if (!imports[i]) return Outcome::kUnavailable;
    }
  }
  for (size_t begin = 0; begin < pieces.size();) {
    const size_t end = window_end(pieces, begin, kMaxWindowPieces, kMaxWindowBytes);
    copy_window(direction, pieces, begin, end, region_of, imports, deadline);
    begin = end;
  }
  // A peer that died mid-copy may leave memory nobody will read: report it like a broken link.
  if (!alive())
    raise(Status::kCommunication, "peer '" + peer_name_ + "' exited during the transfer");
  return Outcome::kDone;
}

void DevicePath::copy_window(Direction direction, const std::vector<Piece>& pieces, size_t begin,
                             size_t end, const std::vector<const RegionRef*>& region_of,
                             const std::vector<std::shared_ptr<Import>>& imports,
                             Deadline deadline) {
  std::vector<const RegionRef*> window_regions(region_of.begin() + begin, region_of.begin() + end);
  RegionHolds holds(view_.slots(), window_regions);
  if (!holds.acquired()) {
    raise(Status::kInvalidInput,
          "a region of '" + peer_name_ + "' was deregistered during the transfer");
  }
  StreamPool::Lease stream(*streams_);
  try {
    // Pieces continuing each other on both sides go as one copy: the wire's 16 MiB pieces cost
    // the copy engine a gap each (a 64 MiB write in four copies measured ~15 us slower than BM's
    // one copy on H200s).
    char* run_here = nullptr;
    char* run_there = nullptr;
    size_t run_bytes = 0;
    auto flush = [&] {
      if (run_bytes == 0) return;
      if (direction == Direction::kWrite) {
        stream.copy(run_there, run_here, run_bytes);
      } else {
        stream.copy(run_here, run_there, run_bytes);
      }
      run_bytes = 0;
    };
    for (size_t i = begin; i < end; ++i) {
      const Piece& piece = pieces[i];
      // In this process the peer's addresses are ours; elsewhere, where the import maps them.
      char* there = reinterpret_cast<char*>(static_cast<uintptr_t>(piece.remote));
      if (imports[i]) {
        there = static_cast<char*>(imports[i]->range->address()) +
                (piece.remote - region_of[i]->address);
      }
      char* here = piece.local;
      const bool continues = run_bytes > 0 && here == run_here + run_bytes &&
                             there == run_there + run_bytes && region_of[i] == region_of[i - 1];
      if (!continues) {
        flush();
        run_here = here;
        run_there = there;
      }
      run_bytes += piece.bytes;
    }
    flush();
    stream.finish(deadline);
  } catch (...) {
    // The copies may still be running: the peer's regions stay held (its deregistration retires
    // them after its wait) and our mappings stay until this path goes.
    holds.abandon();
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = begin; i < end; ++i) {
      if (imports[i]) abandoned_.push_back(imports[i]);
    }
    throw;
  }
}

}  // namespace memloom::smem::trans
