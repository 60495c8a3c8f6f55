#include "src/smem/trans/region_table.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "memloom/error.h"
#include "src/base/hex.h"
#include "src/base/log.h"
#include "src/core/fd_broker.h"

namespace memloom::smem::trans {
namespace {

constexpr size_t kTableBytes = sizeof(TableHeader) + sizeof(TableSlot) * kTableCapacity;

void* map_table(int fd, size_t bytes) {
  void* mapping = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mapping == MAP_FAILED) raise_errno("mmap of a transfer region table", errno);
  return mapping;
}

// A token cut short would fetch nothing (its secret incomplete): the slot must hold the longest.
static_assert(core::FdBroker::kMaxTokenLength < kTokenWords * sizeof(uint64_t));

void store_token(TableSlot& slot, const std::string& token) {
  uint64_t words[kTokenWords] = {};
  std::memcpy(words, token.data(), std::min(token.size(), sizeof(words) - 1));
  for (size_t i = 0; i < kTokenWords; ++i) slot.token[i].store(words[i], std::memory_order_relaxed);
}

std::string load_token(const TableSlot& slot) {
  char text[kTokenWords * sizeof(uint64_t) + 1] = {};
  for (size_t i = 0; i < kTokenWords; ++i) {
    uint64_t word = slot.token[i].load(std::memory_order_acquire);
    std::memcpy(text + i * sizeof(uint64_t), &word, sizeof(word));
  }
  return std::string(text);
}

void store_descriptor(TableSlot& slot, const std::vector<uint8_t>& descriptor) {
  if (descriptor.size() > kMaxDescriptorBytes) {
    raise(Status::kLogic, "an export descriptor of " + std::to_string(descriptor.size()) +
                              " bytes does not fit the region table's " +
                              std::to_string(kMaxDescriptorBytes));
  }
  uint64_t words[kDescriptorWords] = {};
  if (!descriptor.empty()) std::memcpy(words, descriptor.data(), descriptor.size());
  for (size_t i = 0; i < kDescriptorWords; ++i)
    slot.descriptor[i].store(words[i], std::memory_order_relaxed);
  slot.descriptor_bytes.store(descriptor.size(), std::memory_order_relaxed);
}

std::vector<uint8_t> load_descriptor(const TableSlot& slot) {
  uint64_t bytes = std::min<uint64_t>(slot.descriptor_bytes.load(std::memory_order_acquire),
                                      kMaxDescriptorBytes);
  uint64_t words[kDescriptorWords] = {};
  for (size_t i = 0; i < (bytes + sizeof(uint64_t) - 1) / sizeof(uint64_t); ++i)
    words[i] = slot.descriptor[i].load(std::memory_order_acquire);
  std::vector<uint8_t> descriptor(bytes);
  if (bytes > 0) std::memcpy(descriptor.data(), words, bytes);
  return descriptor;
}

// A slot's kind as published; an unknown value (a newer writer) reads as opaque device memory,
// which only the owner's data server touches.
RegionKind load_kind(const TableSlot& slot) {
  uint64_t kind = slot.kind.load(std::memory_order_acquire);
  return kind <= static_cast<uint64_t>(RegionKind::kDeviceOpaque) ? static_cast<RegionKind>(kind)
                                                                  : RegionKind::kDeviceOpaque;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
RegionHolds::RegionHolds(TableSlot* slots, const std::vector<const RegionRef*>& regions)
    : slots_(slots) {
  held_.reserve(regions.size());
  for (const RegionRef* region : regions) {
    if (std::find(held_.begin(), held_.end(), region->slot) != held_.end()) continue;
    TableSlot& slot = slots_[region->slot];
    slot.users.fetch_add(1, std::memory_order_seq_cst);
    if (slot.generation.load(std::memory_order_seq_cst) != region->generation) {
      slot.users.fetch_sub(1, std::memory_order_seq_cst);
      return;  // the destructor releases what was held so far
    }
    held_.push_back(region->slot);
  }
  acquired_ = true;
}

RegionHolds::~RegionHolds() {
  for (uint32_t slot : held_) slots_[slot].users.fetch_sub(1, std::memory_order_release);
}

// ---------------------------------------------------------------------------------------------
RegionTable::RegionTable() {
  fd_.reset(::memfd_create("memloom-trans-regions", MFD_CLOEXEC));
  if (!fd_.valid()) raise_errno("memfd_create for the transfer region table", errno);
  if (::ftruncate(fd_.get(), static_cast<off_t>(kTableBytes)) != 0) {
    raise_errno("sizing the transfer region table", errno);
  }
  mapping_ = map_table(fd_.get(), kTableBytes);
  mapping_bytes_ = kTableBytes;
  header_ = static_cast<TableHeader*>(mapping_);
  slots_ = reinterpret_cast<TableSlot*>(static_cast<char*>(mapping_) + sizeof(TableHeader));
  header_->capacity.store(kTableCapacity);
  header_->magic.store(kTableMagic, std::memory_order_release);
}

RegionTable::~RegionTable() {
  close();
  ::munmap(mapping_, mapping_bytes_);
}

void RegionTable::close() {
  header_->closed.store(1, std::memory_order_seq_cst);
}

bool RegionTable::add(uint64_t address, uint64_t size, const RegionShare& share) {
  if (share.descriptor.size() > kMaxDescriptorBytes) {
    raise(Status::kInvalidInput, "a device export descriptor of " +
                                     std::to_string(share.descriptor.size()) +
                                     " bytes does not fit a region slot");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (const auto* clash = regions_.overlapping(address, size)) {
    const bool is_memfd = share.kind == RegionKind::kMemfd;
    if (clash->is(address, size) && (clash->payload.kind == RegionKind::kMemfd) == is_memfd &&
        (!is_memfd || clash->payload.token == share.token)) {
      return false;  // registering the same range again is harmless
    }
    raise(Status::kInvalidInput, "[" + base::hex(address) + ", +" + std::to_string(size) +
                                     ") overlaps the registered region [" +
                                     base::hex(clash->start) + ", +" + std::to_string(clash->size) +
                                     ")");
  }
  uint32_t index = 0;
  if (!free_slots_.empty()) {
    index = free_slots_.back();
    free_slots_.pop_back();
  } else if (high_water_ < kTableCapacity) {
    index = static_cast<uint32_t>(high_water_++);
    header_->high_water.store(high_water_, std::memory_order_release);
  } else {
    raise(Status::kOutOfMemory,
          "too many registered regions (at most " + std::to_string(kTableCapacity) + ")");
  }
  TableSlot& slot = slots_[index];
  slot.address.store(address, std::memory_order_relaxed);
  slot.size.store(size, std::memory_order_relaxed);
  slot.kind.store(static_cast<uint64_t>(share.kind), std::memory_order_relaxed);
  store_token(slot, share.token);
  store_descriptor(slot, share.descriptor);
  uint64_t generation = slot.generation.load(std::memory_order_relaxed) + 1;  // even -> odd: live
  slot.generation.store(generation, std::memory_order_release);
  header_->version.fetch_add(1, std::memory_order_release);
  // No clash: checked above, under the same lock.
  regions_.insert(
      address, size,
      RegionRef{address, size, index, generation, share.kind, share.token, share.descriptor});
  return true;
}

void RegionTable::remove(uint64_t address, std::chrono::milliseconds wait) {
  RegionRef region;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto* found = regions_.find(address);
    if (found == nullptr) {
      raise(Status::kNotFound, "no registered region starts at " + base::hex(address));
    }
    region = found->payload;
    regions_.erase(address);
    slots_[region.slot].generation.fetch_add(1, std::memory_order_seq_cst);  // odd -> even: dead
    header_->version.fetch_add(1, std::memory_order_seq_cst);
  }
  // Copies hold a region only for one bounded system call or memcpy, so this wait is short.
  TableSlot& slot = slots_[region.slot];
  auto until = std::chrono::steady_clock::now() + wait;
  int spins = 0;
  while (slot.users.load(std::memory_order_seq_cst) != 0) {
    if (std::chrono::steady_clock::now() >= until) {
      MEMLOOM_LOG(kWarn, "a peer still copies into a deregistered region after "
                             << wait.count() << " ms (it died or stalled); its slot is retired");
      return;
    }
    if (++spins < 100) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  free_slots_.push_back(region.slot);
}

std::optional<RegionRef> RegionTable::find(uint64_t address, uint64_t bytes) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto* found = regions_.find_containing(address, bytes);
  if (found == nullptr) return std::nullopt;
  return found->payload;
}

size_t RegionTable::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return regions_.size();
}

// ---------------------------------------------------------------------------------------------
const RegionRef* RegionSnapshot::find(uint64_t address, uint64_t bytes) const {
  auto it = std::upper_bound(regions.begin(), regions.end(), address,
                             [](uint64_t a, const RegionRef& r) { return a < r.address; });
  if (it == regions.begin()) return nullptr;
  --it;
  return it->contains(address, bytes) ? &*it : nullptr;
}

bool RegionSnapshot::holds(uint32_t slot, uint64_t generation) const {
  for (const auto& region : regions) {
    if (region.slot == slot && region.generation == generation) return true;
  }
  return false;
}

std::vector<const RegionRef*> RegionSnapshot::regions_of(const std::vector<Piece>& pieces,
                                                         const std::string& peer_name) const {
  std::vector<const RegionRef*> found(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i) {
    found[i] = find(pieces[i].remote, pieces[i].bytes);
    if (found[i] == nullptr) {
      raise(Status::kInvalidInput, "[" + base::hex(pieces[i].remote) + ", +" +
                                       std::to_string(pieces[i].bytes) +
                                       ") is not inside memory registered by '" + peer_name + "'");
    }
  }
  return found;
}

int fetch_region_fd(const RegionRef& region, const std::string& peer_name, Deadline deadline) {
  try {
    return core::FdBroker::fetch(region.token, deadline);
  } catch (const Error& error) {
    if (error.status() != Status::kNotFound) throw;
    raise(Status::kInvalidInput, "memory of '" + peer_name + "' at " + base::hex(region.address) +
                                     " was freed or deregistered during the transfer");
  }
}

RegionView::RegionView(int fd) {
  base::UniqueFd owned(fd);
  mapping_ = map_table(fd, kTableBytes);
  mapping_bytes_ = kTableBytes;
  header_ = static_cast<TableHeader*>(mapping_);
  slots_ = reinterpret_cast<TableSlot*>(static_cast<char*>(mapping_) + sizeof(TableHeader));
  if (header_->magic.load(std::memory_order_acquire) != kTableMagic ||
      header_->capacity.load() != kTableCapacity) {
    ::munmap(mapping_, mapping_bytes_);
    raise(Status::kCommunication,
          "a peer's region table has an unknown layout (another memloom version?)");
  }
}

RegionView::~RegionView() {
  ::munmap(mapping_, mapping_bytes_);
}

bool RegionView::closed() const {
  return header_->closed.load(std::memory_order_seq_cst) != 0;
}

std::shared_ptr<const RegionSnapshot> RegionView::snapshot() {
  uint64_t version = header_->version.load(std::memory_order_acquire);
  std::lock_guard<std::mutex> lock(mutex_);
  if (cached_ && cached_->version == version) return cached_;
  auto fresh = std::make_shared<RegionSnapshot>();
  fresh->version = version;
  uint64_t high_water =
      std::min<uint64_t>(header_->high_water.load(std::memory_order_acquire), kTableCapacity);
  for (uint32_t i = 0; i < high_water; ++i) {
    TableSlot& slot = slots_[i];
    for (int attempt = 0; attempt < 1000; ++attempt) {
      uint64_t before = slot.generation.load(std::memory_order_acquire);
      if ((before & 1) == 0) break;  // not live
      // Acquire loads keep the second generation load after the field loads (a seqlock
      // without a fence, which ThreadSanitizer cannot follow).
      RegionRef region{slot.address.load(std::memory_order_acquire),
                       slot.size.load(std::memory_order_acquire),
                       i,
                       before,
                       load_kind(slot),
                       load_token(slot),
                       load_descriptor(slot)};
      if (slot.generation.load(std::memory_order_relaxed) == before) {
        fresh->regions.push_back(std::move(region));
        break;
      }
    }
  }
  std::sort(fresh->regions.begin(), fresh->regions.end(),
            [](const RegionRef& a, const RegionRef& b) { return a.address < b.address; });
  cached_ = fresh;
  return cached_;
}

}  // namespace memloom::smem::trans
