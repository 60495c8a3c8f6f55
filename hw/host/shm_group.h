// ShmGroup: the members of one collective group that live on one node, joined through a shared
// memory region, with a barrier and an abort flag in it.
//
// Region layout (one memfd, created by the node's lowest group rank, passed by fd, never named in
// /dev/shm or on disk):
//
//   | ShmControl (wake-up word, abort flag + reason, leader verdicts) | slot 0 | slot 1 | ...
//   slot m = | area[0] | area[1] | data[0] | data[1] |
//   area p   = | arrival flag (16 B) | header (header_bytes) |, padded to 64 B
//
// Barrier: each member writes its header, then stores the number of the barrier it arrives at
// into the arrival flag in front of it, and waits until every member's flag reaches that number.
// With two members that is one cache-line transfer each way, in parallel (a shared counter needs
// several in a row), and the line that brings a peer's arrival brings its header (when it fits
// in the line's other 48 bytes). Waiting follows the policy of MPI and OpenSHMEM shared-memory
// transports (see ShmWaitPolicy): poll with `pause` while the node's members do not outnumber the
// cores they may run on together, then poll with sched_yield, then sleep on a futex; the member
// that completes a barrier wakes the sleepers.
//
// Epochs and parities: every barrier ends an epoch. In an epoch members write only [parity] areas
// (parity = barriers passed so far, mod 2; a member writes its own slot, except a broadcast root,
// which alone writes every slot's data) and read only the other parity, filled in the previous
// epoch. An area is rewritten two epochs after it was filled, and every reader has passed the
// barrier in between, so one barrier per round is enough.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hw/hal/bootstrap.h"
#include "hw/host/wait_policy.h"
#include "memloom/deadline.h"

namespace memloom::host {

struct ShmControl;
struct ShmArrival;

struct ShmGroupOptions {
  std::vector<ShmMember> members;  // this node's members in group-rank order
  int local_index = 0;             // this process's position in `members`
  size_t header_bytes = 64;        // per member and parity
  size_t chunk_bytes = 256 << 10;  // data per member and parity (used by the creator only)
  std::string key;                 // bootstrap key under which the creator publishes the fd token
};

// The outcome of an agreement that the node leader hands to the other members.
struct ShmVerdict {
  bool ok = true;
  std::string message;
};

class ShmGroup {
 public:
  static constexpr size_t kArrivalBytes = 16;  // the arrival flag in front of each header area

  // The member at local index 0 creates and publishes the region; the others attach. Returns
  // once this process has the region mapped (not once all have: follow with barrier()).
  ShmGroup(const ShmGroupOptions& options, hal::Bootstrap& bootstrap, Deadline deadline);
  ~ShmGroup();
  ShmGroup(const ShmGroup&) = delete;
  ShmGroup& operator=(const ShmGroup&) = delete;

  // Stops publishing the region's fd (creator only; others have mapped it by the first barrier).
  void withdraw_fd(hal::Bootstrap& bootstrap);

  int local_index() const { return local_index_; }
  int local_size() const { return static_cast<int>(members_.size()); }
  const std::vector<ShmMember>& members() const { return members_; }
  size_t chunk_bytes() const { return chunk_bytes_; }
  size_t header_bytes() const;  // usable bytes of each header area
  const ShmWaitPolicy& wait_policy() const { return policy_; }

  // The areas this member may write in the current epoch, and the peers' areas it may read.
  std::byte* write_header() { return header(local_index_, write_parity()); }
  std::byte* write_data(int member) { return data(member, write_parity()); }
  const std::byte* read_header(int member) const { return header(member, read_parity()); }
  const std::byte* read_data(int member) const { return data(member, read_parity()); }

  // Waits until every member of the node arrived. Throws kCommunication when the group is
  // aborted or a member process died, kTimeout at the deadline.
  void barrier(Deadline deadline);

  // The leader's verdict: written before a barrier, read by the others after it.
  void write_verdict(const ShmVerdict& verdict);
  ShmVerdict read_verdict() const;

  // Marks the group aborted and wakes every waiter. Returns true if this call set the flag
  // (false: it was already aborted, the first reason is kept).
  bool abort(const std::string& reason);
  bool aborted() const;
  std::string abort_reason() const;

  // Throws if the group is aborted, a member process died (checked at most every few ms) or the
  // deadline passed. Used by every wait, here and in the cross-node channel.
  void check_health(Deadline deadline);

 private:
  // In the header (inlined): a barrier computes several of these, and out of line in a shared
  // library each is a call through the PLT.
  int write_parity() const { return static_cast<int>(epoch_ & 1); }
  int read_parity() const { return static_cast<int>((epoch_ + 1) & 1); }
  std::byte* area(int member, int parity) const {
    return slots_ + slot_bytes_ * static_cast<size_t>(member) +
           header_bytes_ * static_cast<size_t>(parity);
  }
  std::byte* header(int member, int parity) const { return area(member, parity) + kArrivalBytes; }
  std::byte* data(int member, int parity) const {
    return slots_ + slot_bytes_ * static_cast<size_t>(member) + 2 * header_bytes_ +
           chunk_bytes_ * static_cast<size_t>(parity);
  }
  void create(hal::Bootstrap& bootstrap, size_t chunk_bytes, const std::string& key);
  void attach(hal::Bootstrap& bootstrap, const std::string& key, Deadline deadline);
  // The barrier's helpers are hidden: a member function exported from the shared library may be
  // interposed, so the compiler calls it through the PLT and never inlines it into barrier().
  [[gnu::visibility("hidden")]] ShmArrival& arrival(int member) const;
  [[gnu::visibility("hidden")]] bool awaited_member_shares_my_core() const;
  [[gnu::visibility("hidden")]] bool a_due_member_may_share_my_core(uint64_t number) const;
  [[gnu::visibility("hidden")]] bool all_arrived(uint64_t barrier_number);
  [[gnu::visibility("hidden")]] void wake_sleepers();
  [[gnu::visibility("hidden")]] void wait_for_arrivals(uint64_t barrier_number, Deadline deadline);
  [[gnu::visibility("hidden")]] bool healthy_or_arrived(uint64_t barrier_number, Deadline deadline,
                                                        std::chrono::steady_clock::time_point now);
  // Who has not arrived at `barrier_number`, for reports and errors.
  std::string missing_description(uint64_t barrier_number) const;
  // check_health with the time already read.
  [[gnu::visibility("hidden")]] void check_health_at(Deadline deadline,
                                                     std::chrono::steady_clock::time_point now);
  void open_member_pidfds();
  void check_members_alive();

  std::vector<ShmMember> members_;
  int local_index_ = 0;
  size_t header_bytes_ = 0;  // per area: arrival flag + header, padded
  size_t chunk_bytes_ = 0;
  size_t slot_bytes_ = 0;
  size_t region_bytes_ = 0;
  void* region_ = nullptr;
  ShmControl* control_ = nullptr;
  std::byte* slots_ = nullptr;
  ShmWaitPolicy policy_;
  int scan_from_ = 0;        // members before this one are known to have arrived at this barrier
  std::vector<int> pidfds_;  // per member; -1 for this process or where pidfd_open failed
  std::string fd_token_;     // non-empty while the creator publishes the fd
  uint64_t epoch_ = 0;       // barriers this member has passed
  std::chrono::steady_clock::time_point last_liveness_check_{};
  int next_liveness_member_ = 0;  // check_members_alive resumes its round here
};

}  // namespace memloom::host
