// The registry of memory an instance lets peers read and write, kept in a memfd that same-node
// peers map (the fd travels through the FdBroker). Peers on the node validate their copies against
// the owner's live table without a round trip, and the owner's deregistration waits for copies in
// flight, so a deregistered region is never written to.
//
// Protocol (every field is an atomic in shared memory):
// - a slot's `generation` is odd while it holds a live region and changes on every state change;
//   the owner writes address/size/token only while it is even, so a reader that sees the same odd
//   generation before and after reading the fields has a consistent copy (a per-slot seqlock);
// - a copier announces itself with users++ and then re-checks the generation; deregistration bumps
//   the generation and then waits for users == 0. With sequentially consistent operations one of
//   the two always sees the other (Dekker), so either the copier backs off or the owner waits;
// - the header's `version` moves on every change, letting readers cache a sorted snapshot.
//
// A slot also says how a same-node peer reaches the region (RegionKind): memory of
// smem_trans_malloc is a memfd (its FdBroker token), device memory the backend exported carries
// the export's descriptor bytes and, where the backend needs one, the FdBroker token of its fd.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "memloom/deadline.h"
#include "src/base/range_map.h"
#include "src/base/unique_fd.h"
#include "src/smem/trans/transfer_piece.h"

namespace memloom::smem::trans {

inline constexpr uint64_t kTableMagic = 0x324e474552544c4dull;  // "MLTREGN2"
inline constexpr uint32_t kTableCapacity = 1u << 16;
inline constexpr size_t kTokenWords = 11;       // 88 bytes: an FdBroker token
inline constexpr size_t kDescriptorWords = 24;  // 192 bytes: a backend's device export
inline constexpr size_t kMaxDescriptorBytes = kDescriptorWords * sizeof(uint64_t);

// How a same-node peer reaches a region's bytes.
enum class RegionKind : uint64_t {
  kPlain = 0,         // host memory: cross-memory attach, or the data server
  kMemfd = 1,         // token: a memfd segment the peer maps
  kDeviceExport = 2,  // descriptor (+ token of its fd, if any): hal::MemoryDomain device export
  kDeviceOpaque = 3,  // device memory without an export: only the owner's data server reaches it
};

struct alignas(128) TableHeader {
  std::atomic<uint64_t> magic;
  std::atomic<uint64_t> capacity;
  std::atomic<uint64_t> version;
  std::atomic<uint64_t> high_water;  // slots [0, high_water) have been used
  std::atomic<uint64_t> closed;      // the owner destroyed its instance
};

struct alignas(128) TableSlot {
  std::atomic<uint64_t> generation;
  std::atomic<uint64_t> users;
  std::atomic<uint64_t> address;
  std::atomic<uint64_t> size;
  std::atomic<uint64_t> kind;                // RegionKind
  std::atomic<uint64_t> token[kTokenWords];  // FdBroker token of the memfd or export fd, or ""
  std::atomic<uint64_t> descriptor_bytes;
  std::atomic<uint64_t> descriptor[kDescriptorWords];
};
static_assert(std::atomic<uint64_t>::is_always_lock_free,
              "shared-memory atomics must be lock-free");

// One registered region as seen at some moment.
struct RegionRef {
  uint64_t address = 0;
  uint64_t size = 0;
  uint32_t slot = 0;
  uint64_t generation = 0;
  RegionKind kind = RegionKind::kPlain;
  std::string token;                // kMemfd: the segment's fd; kDeviceExport: the export's fd
  std::vector<uint8_t> descriptor;  // kDeviceExport: the backend's descriptor

  bool contains(uint64_t start, uint64_t bytes) const {
    return start >= address && bytes <= size && start - address <= size - bytes;
  }
};

// Marks regions busy for the duration of one copy: acquire() fails (and holds nothing) when any
// region has been deregistered since it was looked up.
class RegionHolds {
 public:
  RegionHolds(TableSlot* slots, const std::vector<const RegionRef*>& regions);
  ~RegionHolds();
  bool acquired() const { return acquired_; }
  // Keeps the regions held for good: for a copy that may still run after its caller gave up (a
  // timed-out stream). The owner's deregistration then retires the slots after its wait.
  void abandon() { held_.clear(); }
  RegionHolds(const RegionHolds&) = delete;
  RegionHolds& operator=(const RegionHolds&) = delete;

 private:
  TableSlot* slots_;
  std::vector<uint32_t> held_;
  bool acquired_ = false;
};

// What add() publishes besides the range.
struct RegionShare {
  RegionKind kind = RegionKind::kPlain;
  std::string token;
  std::vector<uint8_t> descriptor;  // at most kMaxDescriptorBytes
};

// The owner's side. Thread-safe.
class RegionTable {
 public:
  RegionTable();
  ~RegionTable();  // marks the table closed for peers still mapping it
  int fd() const { return fd_.get(); }
  TableSlot* slots() { return slots_; }

  // Adds [address, address+size); false if exactly that range was already there (a no-op: for
  // user memory whatever was exported for it, for a memfd the same token). An overlap throws
  // kInvalidInput, a full table kOutOfMemory, a descriptor over kMaxDescriptorBytes kInvalidInput.
  bool add(uint64_t address, uint64_t size, const RegionShare& share = {});
  // Removes the region starting at address (kNotFound if none) and waits until no copy uses it.
  // A copier that holds it past `wait` has died or stalled: the slot is then never reused.
  void remove(uint64_t address, std::chrono::milliseconds wait);
  std::optional<RegionRef> find(uint64_t address, uint64_t bytes) const;
  size_t size() const;
  void close();

 private:
  base::UniqueFd fd_;
  void* mapping_ = nullptr;
  size_t mapping_bytes_ = 0;
  TableHeader* header_ = nullptr;
  TableSlot* slots_ = nullptr;
  mutable std::mutex mutex_;
  base::RangeMap<RegionRef> regions_;  // each whole, as find() hands it out
  std::vector<uint32_t> free_slots_;
  uint64_t high_water_ = 0;
};

// A sorted copy of a peer's live regions.
struct RegionSnapshot {
  uint64_t version = 0;
  std::vector<RegionRef> regions;
  const RegionRef* find(uint64_t address, uint64_t bytes) const;
  // Whether the region of `slot` in generation `generation` is still registered.
  bool holds(uint32_t slot, uint64_t generation) const;
  // The region of every piece (pieces[i].remote, pieces[i].bytes), in order; kInvalidInput, naming
  // `peer_name`, for a piece outside every region.
  std::vector<const RegionRef*> regions_of(const std::vector<Piece>& pieces,
                                           const std::string& peer_name) const;
};

// The file descriptor behind `region`'s FdBroker token (the caller owns it). kInvalidInput, naming
// `peer_name`, when the peer freed or deregistered the region since the token was read.
int fetch_region_fd(const RegionRef& region, const std::string& peer_name, Deadline deadline);

// A peer's table mapped into this process. Thread-safe.
class RegionView {
 public:
  // Takes ownership of fd (from FdBroker::fetch). Throws kCommunication on a malformed table.
  explicit RegionView(int fd);
  ~RegionView();
  RegionView(const RegionView&) = delete;
  RegionView& operator=(const RegionView&) = delete;
  bool closed() const;
  TableSlot* slots() { return slots_; }
  // The current regions; rebuilt only when the owner changed its table since the last call.
  std::shared_ptr<const RegionSnapshot> snapshot();

 private:
  void* mapping_ = nullptr;
  size_t mapping_bytes_ = 0;
  TableHeader* header_ = nullptr;
  TableSlot* slots_ = nullptr;
  std::mutex mutex_;
  std::shared_ptr<const RegionSnapshot> cached_;
};

}  // namespace memloom::smem::trans
