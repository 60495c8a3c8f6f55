#include "hw/host/shm_group.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <thread>

#include "memloom/error.h"
#include "src/base/wait_reporter.h"

namespace memloom::host {

namespace {

constexpr uint64_t kMagic = 0x4d4c434f4c4c3031ull;  // "MLCOLL01"
constexpr uint32_t kVersion = 2;
constexpr size_t kReasonBytes = 480;
// A spinning waiter reads the clock and the abort flag once per this many pauses.
constexpr uint32_t kPausesPerClockRead = 32;
// With members outnumbering the cores, the longest spin (see wait_for_arrivals).
constexpr std::chrono::nanoseconds kOversubscribedSpin = std::chrono::microseconds(20);
// A sleeping waiter wakes at least this often to check the abort flag, peers and its deadline.
constexpr long kSleepSliceNs = 20'000'000;
constexpr auto kLivenessInterval = std::chrono::milliseconds(20);
constexpr int kMembersPerLivenessCheck = 16;

static_assert(std::atomic<uint32_t>::is_always_lock_free && sizeof(std::atomic<uint32_t>) == 4,
              "the futex word must be a plain 32-bit integer");
static_assert(std::atomic<uint64_t>::is_always_lock_free,
              "arrival flags are shared between processes: they must not need a lock");

enum AbortState : uint32_t { kRunning = 0, kWritingReason = 1, kAborted = 2 };

}  // namespace

struct ShmVerdictArea {
  uint32_t ok;
  char message[kReasonBytes];
};

// The arrival flag in front of each header area: the member's header of a barrier and its
// arrival share a cache line, so a waiter that sees the arrival has the header too.
struct alignas(ShmGroup::kArrivalBytes) ShmArrival {
  std::atomic<uint64_t> number;  // the last barrier of this parity the member arrived at
  std::atomic<int32_t> cpu;      // the CPU it ran on when it arrived (-1: unknown)
};
static_assert(sizeof(ShmArrival) == ShmGroup::kArrivalBytes);

struct ShmControl {
  uint64_t magic;
  uint32_t version;
  uint32_t members;
  uint64_t header_bytes;
  uint64_t chunk_bytes;
  uint64_t slot_bytes;
  uint64_t region_bytes;
  // Futex word: bumped (to wake sleepers) when a barrier completes while some member sleeps, and
  // by abort(). Its value means nothing else; arrival flags say whether a barrier completed.
  alignas(64) std::atomic<uint32_t> generation;
  // Waiters about to sleep or sleeping (lets completers skip the wake-up system call).
  std::atomic<uint32_t> sleepers;
  alignas(64) std::atomic<uint32_t> abort_state;
  char abort_reason[kReasonBytes];
  ShmVerdictArea verdict[2];
};

namespace {

size_t round_up(size_t value, size_t to) {
  return (value + to - 1) / to * to;
}

size_t control_bytes() {
  return round_up(sizeof(ShmControl), 4096);
}

// The fallback where pidfds are unavailable. kill(pid, 0) alone is not enough: a killed child
// stays a zombie (and answers kill) until its parent reaps it.
bool process_alive(pid_t pid) {
  if (pid <= 0) return true;
  if (::kill(pid, 0) != 0) return errno == EPERM;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  auto paren = line.rfind(')');
  if (paren == std::string::npos || paren + 2 >= line.size()) return true;
  char state = line[paren + 2];
  return state != 'Z' && state != 'X';
}

void copy_reason(char* destination, const std::string& reason) {
  size_t n = std::min(reason.size(), kReasonBytes - 1);
  std::memcpy(destination, reason.data(), n);
  destination[n] = '\0';
}

}  // namespace

ShmGroup::ShmGroup(const ShmGroupOptions& options, hal::Bootstrap& bootstrap, Deadline deadline)
    : members_(options.members),
      local_index_(options.local_index),
      header_bytes_(round_up(kArrivalBytes + options.header_bytes, 64)) {
  MEMLOOM_CHECK_ARG(!members_.empty(), "a shared-memory group needs at least one member");
  policy_ =
      ShmWaitPolicy::for_members(static_cast<int>(members_.size()), available_cores_of(members_));
  MEMLOOM_CHECK_ARG(local_index_ >= 0 && local_index_ < local_size(),
                    "local index out of range of the node's members");
  if (local_index_ == 0) {
    MEMLOOM_CHECK_ARG(options.chunk_bytes >= 4096 && options.chunk_bytes <= (64u << 20),
                      "collective slot size must be between 4 KiB and 64 MiB");
    create(bootstrap, round_up(options.chunk_bytes, 64), options.key);
  } else {
    attach(bootstrap, options.key, deadline);
  }
  open_member_pidfds();
  last_liveness_check_ = std::chrono::steady_clock::now();
}

ShmGroup::~ShmGroup() {
  for (int fd : pidfds_) {
    if (fd >= 0) ::close(fd);
  }
  if (region_ != nullptr) ::munmap(region_, region_bytes_);
}

// A pidfd polls readable once its process has exited (zombie or not) and never names a recycled
// pid, so a liveness check of the whole node is one poll() instead of kill() + /proc reads per
// peer, which matters when many ranks wait long in a barrier.
void ShmGroup::open_member_pidfds() {
  pidfds_.assign(members_.size(), -1);
  for (int m = 0; m < local_size(); ++m) {
    if (m == local_index_ || members_[m].pid <= 0) continue;
    long fd = ::syscall(SYS_pidfd_open, members_[m].pid, 0);
    if (fd >= 0) {
      ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
      pidfds_[m] = static_cast<int>(fd);
    }
  }
}

void ShmGroup::create(hal::Bootstrap& bootstrap, size_t chunk_bytes, const std::string& key) {
  chunk_bytes_ = chunk_bytes;
  slot_bytes_ = 2 * header_bytes_ + 2 * chunk_bytes_;
  region_bytes_ = control_bytes() + slot_bytes_ * members_.size();
  int fd = ::memfd_create("memloom-collectives", MFD_CLOEXEC);
  if (fd < 0) raise_errno("memfd_create for the collective region", errno);
  if (::ftruncate(fd, static_cast<off_t>(region_bytes_)) != 0) {
    int error = errno;
    ::close(fd);
    raise_errno("sizing the collective region to " + std::to_string(region_bytes_) + " bytes",
                error);
  }
  region_ = ::mmap(nullptr, region_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (region_ == MAP_FAILED) {
    int error = errno;
    region_ = nullptr;
    ::close(fd);
    raise_errno("mapping the collective region", error);
  }
  // The fresh memfd is zero-filled: every counter and arrival number starts at 0.
  control_ = new (region_) ShmControl();
  control_->magic = kMagic;
  control_->version = kVersion;
  control_->members = static_cast<uint32_t>(members_.size());
  control_->header_bytes = header_bytes_;
  control_->chunk_bytes = chunk_bytes_;
  control_->slot_bytes = slot_bytes_;
  control_->region_bytes = region_bytes_;
  slots_ = static_cast<std::byte*>(region_) + control_bytes();
  for (int m = 0; m < local_size(); ++m) {
    for (int parity = 0; parity < 2; ++parity) {
      auto* flag = new (area(m, parity)) ShmArrival();
      flag->cpu.store(-1, std::memory_order_relaxed);
    }
  }
  try {
    fd_token_ = bootstrap.publish_fd(fd);
    ::close(fd);
    fd = -1;
    bootstrap.put(key, fd_token_);
  } catch (...) {
    if (fd >= 0) ::close(fd);
    if (!fd_token_.empty()) bootstrap.withdraw_fd(fd_token_);
    fd_token_.clear();
    throw;
  }
}

void ShmGroup::attach(hal::Bootstrap& bootstrap, const std::string& key, Deadline deadline) {
  std::string token = bootstrap.wait_get(key, deadline);
  int fd = bootstrap.fetch_fd(token, deadline);
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    int error = errno;
    ::close(fd);
    raise_errno("fstat of the collective region", error);
  }
  region_bytes_ = static_cast<size_t>(info.st_size);
  if (region_bytes_ < control_bytes()) {
    ::close(fd);
    raise(Status::kCommunication, "the collective region published under '" + key +
                                      "' is too small (" + std::to_string(region_bytes_) + " B)");
  }
  region_ = ::mmap(nullptr, region_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int error = errno;
  ::close(fd);
  if (region_ == MAP_FAILED) {
    region_ = nullptr;
    raise_errno("mapping the collective region", error);
  }
  control_ = static_cast<ShmControl*>(region_);
  if (control_->magic != kMagic || control_->version != kVersion ||
      control_->members != members_.size() || control_->header_bytes != header_bytes_ ||
      control_->region_bytes != region_bytes_) {
    raise(Status::kCommunication,
          "the collective region published under '" + key +
              "' does not match this group (another group's region, or a different memloom "
              "version)");
  }
  chunk_bytes_ = control_->chunk_bytes;
  slot_bytes_ = control_->slot_bytes;
  slots_ = static_cast<std::byte*>(region_) + control_bytes();
}

void ShmGroup::withdraw_fd(hal::Bootstrap& bootstrap) {
  if (fd_token_.empty()) return;
  std::string token = std::move(fd_token_);
  fd_token_.clear();
  bootstrap.withdraw_fd(token);
}

size_t ShmGroup::header_bytes() const {
  return header_bytes_ - kArrivalBytes;
}

// During a barrier the flags of the current epoch's parity: the areas whose headers were just
// written.
ShmArrival& ShmGroup::arrival(int member) const {
  return *std::launder(reinterpret_cast<ShmArrival*>(area(member, write_parity())));
}

// Flags only grow, so members found arrived stay arrived: each barrier scans every flag once,
// then polls one line at a time. (Prefetching the data line of each member found arrived, for a
// small allgather's read after the barrier, was measured: no gain on 2-rank allgathers, and
// barriers 5-10 ns slower.)
bool ShmGroup::all_arrived(uint64_t barrier_number) {
  for (; scan_from_ < local_size(); ++scan_from_) {
    if (arrival(scan_from_).number.load(std::memory_order_seq_cst) < barrier_number) return false;
  }
  return true;
}

// Called by every member that finds the barrier complete right after arriving (at least the last
// arriver does). Both sides are seq_cst (a Dekker pair): a waiter registers in `sleepers` before
// its last look at the flags, a completer sees all flags before it reads `sleepers`, so either the
// completer sees the sleeper and wakes it, or the sleeper sees every flag and does not sleep.
void ShmGroup::wake_sleepers() {
  if (control_->sleepers.load(std::memory_order_seq_cst) == 0) return;
  control_->generation.fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(&control_->generation);
}

void ShmGroup::barrier(Deadline deadline) {
  if (aborted()) check_health(deadline);  // throws with the reason
  const uint64_t number = epoch_ + 1;
  ShmArrival& mine = arrival(local_index_);
  mine.cpu.store(::sched_getcpu(), std::memory_order_relaxed);
  mine.number.store(number, std::memory_order_seq_cst);
  scan_from_ = 0;
  if (all_arrived(number)) {
    wake_sleepers();
  } else {
    wait_for_arrivals(number, deadline);
  }
  ++epoch_;
}

// True when the barrier completed; otherwise throws if the group is aborted, a member died or
// the deadline passed. A barrier that completed is a success whatever happened after it (a
// member that passed it may already have exited).
bool ShmGroup::healthy_or_arrived(uint64_t barrier_number, Deadline deadline,
                                  std::chrono::steady_clock::time_point now) {
  if (all_arrived(barrier_number)) return true;
  try {
    check_health_at(deadline, now);
  } catch (const Error& error) {
    if (all_arrived(barrier_number)) return true;
    if (error.status() == Status::kTimeout) {
      raise(Status::kTimeout,
            "deadline passed while waiting for " + missing_description(barrier_number));
    }
    throw;
  }
  return all_arrived(barrier_number);
}

// "ranks 2,3 (of 4 on this node) to arrive at barrier 7": the group ranks not yet at the barrier.
std::string ShmGroup::missing_description(uint64_t barrier_number) const {
  std::vector<int> missing;
  for (int m = 0; m < local_size(); ++m) {
    if (arrival(m).number.load(std::memory_order_acquire) < barrier_number) {
      missing.push_back(members_[m].rank);
    }
  }
  return std::string(missing.size() == 1 ? "rank " : "ranks ") + base::rank_list(missing) +
         " (of " + std::to_string(local_size()) + " on this node) to arrive at barrier " +
         std::to_string(barrier_number);
}

// True when the member this waiter polls last arrived on the CPU this waiter runs on: it is
// then waiting for this very core (ranks are not pinned, and the scheduler may stack two on one
// core while the other is busy), so spinning would only delay it.
bool ShmGroup::awaited_member_shares_my_core() const {
  if (scan_from_ >= local_size()) return false;
  const int theirs = arrival(scan_from_).cpu.load(std::memory_order_relaxed);
  return theirs >= 0 && theirs == ::sched_getcpu();
}

// True when a member that has not arrived at barrier `number` last arrived on the CPU this
// waiter runs on, or has never said where it runs.
bool ShmGroup::a_due_member_may_share_my_core(uint64_t number) const {
  const int mine = ::sched_getcpu();
  for (int m = scan_from_; m < local_size(); ++m) {
    const ShmArrival& flag = arrival(m);
    if (flag.number.load(std::memory_order_acquire) >= number) continue;
    const int theirs = flag.cpu.load(std::memory_order_relaxed);
    if (theirs < 0 || theirs == mine) return true;
  }
  return false;
}

void ShmGroup::wait_for_arrivals(uint64_t number, Deadline deadline) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  // 0. Members outnumber the cores, but none of those still due last ran on this core: they wait
  // for cores of their own, not this one, so yielding this core to a member that has already
  // arrived only costs two context switches. Spin a little instead.
  if (policy_.oversubscribed && policy_.spin.count() > 0 &&
      !a_due_member_may_share_my_core(number)) {
    const auto limit = std::min<std::chrono::nanoseconds>(policy_.spin, kOversubscribedSpin);
    for (uint32_t i = 1;; ++i) {
      if (all_arrived(number)) return;
      cpu_relax();
      if (i % kPausesPerClockRead == 0 &&
          (aborted() || Clock::now() - start >= limit || a_due_member_may_share_my_core(number))) {
        break;
      }
    }
  }
  // 1. Spin: the peers hold cores of their own and arrive within microseconds. Not while the
  // member awaited last ran on this core: it needs this core to arrive.
  const std::chrono::nanoseconds spin = policy_.spin;
  if (!policy_.oversubscribed && spin.count() > 0 && !awaited_member_shares_my_core()) {
    for (uint32_t i = 1;; ++i) {
      if (all_arrived(number)) return;
      cpu_relax();
      if (i % kPausesPerClockRead == 0 &&
          (aborted() || Clock::now() - start >= spin || awaited_member_shares_my_core())) {
        break;
      }
    }
  }
  // 2. Yield: gives the core to a peer that shares it, and stays responsive. One clock read per
  // round (there were three): with members outnumbering the cores, waiters spend their time
  // here, and a profile of 4 ranks on 2 cores found 7% of all time in clock reads, more than in
  // the rest of memloom's own code.
  auto now = Clock::now();
  const auto yield_end = now + policy_.yield;
  for (;; now = Clock::now()) {
    if (healthy_or_arrived(number, deadline, now)) return;
    if (now >= yield_end) break;
    ::sched_yield();
    if (all_arrived(number)) return;
  }
  // 3. Sleep until a completer wakes us, checking health every slice. A wait past 5 s says whom
  // it waits for (a rank held up or stopped elsewhere; a dead one is caught by the health check).
  base::WaitReporter reporter(deadline);
  while (true) {
    if (healthy_or_arrived(number, deadline, Clock::now())) return;
    reporter.poll([&] { return missing_description(number); });
    control_->sleepers.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t generation = control_->generation.load(std::memory_order_seq_cst);
    // An abort bumps the word too: one that came before this load is seen here, one after it
    // makes the futex return.
    if (all_arrived(number) || aborted()) {
      control_->sleepers.fetch_sub(1, std::memory_order_seq_cst);
      continue;
    }
    long left_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.remaining()).count();
    futex_wait(&control_->generation, generation,
               std::max<long>(1'000'000, std::min(left_ns, kSleepSliceNs)));
    control_->sleepers.fetch_sub(1, std::memory_order_seq_cst);
  }
}

void ShmGroup::write_verdict(const ShmVerdict& verdict) {
  ShmVerdictArea& area = control_->verdict[write_parity()];
  area.ok = verdict.ok ? 1 : 0;
  copy_reason(area.message, verdict.message);
}

ShmVerdict ShmGroup::read_verdict() const {
  const ShmVerdictArea& area = control_->verdict[read_parity()];
  return ShmVerdict{area.ok != 0, std::string(area.message, strnlen(area.message, kReasonBytes))};
}

bool ShmGroup::abort(const std::string& reason) {
  uint32_t expected = kRunning;
  bool first = control_->abort_state.compare_exchange_strong(expected, kWritingReason,
                                                             std::memory_order_acq_rel);
  if (first) {
    copy_reason(control_->abort_reason, reason);
    control_->abort_state.store(kAborted, std::memory_order_release);
  }
  // Bumping the word first also stops a waiter that is just about to sleep.
  control_->generation.fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(&control_->generation);
  return first;
}

bool ShmGroup::aborted() const {
  return control_->abort_state.load(std::memory_order_acquire) != kRunning;
}

std::string ShmGroup::abort_reason() const {
  // The reason is written between the two state changes; a reader that catches the gap waits
  // a moment rather than reporting a half-written message.
  for (int i = 0; i < 1000; ++i) {
    uint32_t state = control_->abort_state.load(std::memory_order_acquire);
    if (state == kRunning) return "";
    if (state == kAborted) {
      return std::string(control_->abort_reason, strnlen(control_->abort_reason, kReasonBytes));
    }
    ::sched_yield();
  }
  return "(reason not recorded)";
}

void ShmGroup::check_health(Deadline deadline) {
  check_health_at(deadline, std::chrono::steady_clock::now());
}

void ShmGroup::check_health_at(Deadline deadline, std::chrono::steady_clock::time_point now) {
  if (aborted()) {
    raise(Status::kCommunication, "the collective group is aborted: " + abort_reason());
  }
  if (now - last_liveness_check_ >= kLivenessInterval) {
    last_liveness_check_ = now;
    check_members_alive();
  }
  if (now >= deadline.time_point()) {
    raise(Status::kTimeout, "deadline passed while waiting for the other ranks");
  }
}

void ShmGroup::check_members_alive() {
  std::vector<pollfd> polls;
  for (int fd : pidfds_) {
    if (fd >= 0) polls.push_back({fd, POLLIN, 0});
  }
  if (!polls.empty()) ::poll(polls.data(), polls.size(), 0);  // revents stay 0 unless exited
  size_t next_poll = 0;
  for (int m = 0; m < local_size(); ++m) {
    if (m == local_index_) continue;
    const bool alive =
        pidfds_[m] >= 0 ? polls[next_poll++].revents == 0 : process_alive(members_[m].pid);
    if (!alive) {
      raise(Status::kCommunication, "rank " + std::to_string(members_[m].rank) + " (pid " +
                                        std::to_string(members_[m].pid) +
                                        ") on this node has died");
    }
  }
}

}  // namespace memloom::host
