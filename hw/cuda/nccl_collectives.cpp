#include "hw/cuda/nccl_collectives.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "hw/cuda/cuda_check.h"
#include "memloom/error.h"
#include "src/base/log.h"

namespace memloom::cuda {
namespace {

constexpr const char* kUniqueIdKey = "cuda/nccl-id";
constexpr const char* kPoisonKey = "cuda/poison";
constexpr size_t kMinimumStaging = 64 * 1024;
constexpr auto kPeerCheckInterval = std::chrono::milliseconds(50);
constexpr auto kFinalizeTimeout = std::chrono::seconds(5);

std::string to_hex(const void* data, size_t bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string text(2 * bytes, '0');
  const auto* in = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < bytes; ++i) {
    text[2 * i] = digits[in[i] >> 4];
    text[2 * i + 1] = digits[in[i] & 15];
  }
  return text;
}

ncclUniqueId unique_id_from_hex(const std::string& text) {
  ncclUniqueId id{};
  if (text.size() != 2 * sizeof(id.internal)) {
    raise(Status::kCommunication, "the NCCL unique id in the bootstrap is malformed");
  }
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (size_t i = 0; i < sizeof(id.internal); ++i) {
    id.internal[i] = static_cast<char>(nibble(text[2 * i]) << 4 | nibble(text[2 * i + 1]));
  }
  return id;
}

}  // namespace

NcclCollectives::NcclCollectives(const hal::GroupSpec& group, hal::Bootstrap& bootstrap, int device)
    : group_(group), bootstrap_(bootstrap), device_(device) {}

std::unique_ptr<NcclCollectives> NcclCollectives::create(const hal::GroupSpec& group,
                                                         hal::Bootstrap& bootstrap, int device,
                                                         Deadline deadline) {
  std::unique_ptr<NcclCollectives> self(new NcclCollectives(group, bootstrap, device));
  DeviceGuard guard(device);
  check_cuda(cudaStreamCreateWithFlags(&self->stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  check_cuda(cudaMalloc(&self->barrier_word_, sizeof(int32_t)), "cudaMalloc");
  ncclUniqueId id{};
  if (group.rank == 0) {
    ncclResult_t result = ncclGetUniqueId(&id);
    if (result != ncclSuccess) raise_nccl(result, "ncclGetUniqueId", Status::kCommunication);
    bootstrap.put(kUniqueIdKey, to_hex(id.internal, sizeof(id.internal)));
  } else {
    id = unique_id_from_hex(bootstrap.wait_get(kUniqueIdKey, deadline));
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // every wait below is ours to bound
  ncclResult_t result = ncclCommInitRankConfig(&self->comm_, group.size, id, group.rank, &config);
  if (result != ncclSuccess && result != ncclInProgress) {
    self->fail(Status::kCommunication,
               std::string("ncclCommInitRankConfig failed: ") + ncclGetErrorString(result));
  }
  self->wait("creating the NCCL communicator", deadline, Until::kCompleted);
  // The first exchange proves the communicator works and that every rank is in step.
  self->guarded(
      [&] { self->agree(host::CollectiveHeader(host::CollectiveOp::kCreate), deadline); });
  return self;
}

NcclCollectives::~NcclCollectives() {
  // The whole teardown runs on a thread of its own, owning copies of everything it releases:
  // NCCL's has been seen to block forever inside the driver (cuMemRelease under ncclCommDestroy,
  // H200 with NCCL 2.28, in a process that made a new communicator after destroying one). The
  // destructor waits a bounded time; past it the thread is left behind with what it holds (a
  // leak, logged) rather than hanging the caller.
  struct Teardown {
    ncclComm_t comm = nullptr;
    bool clean = false;  // finalize first (no failure seen), else abort
    int device = 0;
    std::thread aborter;
    void* barrier_word = nullptr;
    std::vector<void*> device_buffers, host_buffers;
    cudaStream_t stream = nullptr;
    // What the thread is doing, for the log when it does not finish in time.
    std::atomic<const char*> stage{"starting"};
    std::atomic<bool> finalize_failed{false};
    std::atomic<bool> done{false};
  };
  auto work = std::make_shared<Teardown>();
  work->comm = comm_;
  work->clean = !poisoned_;
  work->device = device_;
  work->aborter = std::move(aborter_);
  work->barrier_word = barrier_word_;
  for (Buffer* buffer : {&device_send_, &device_recv_}) {
    if (buffer->data != nullptr) work->device_buffers.push_back(buffer->data);
  }
  for (Buffer* buffer : {&host_send_, &host_recv_}) {
    if (buffer->data != nullptr) work->host_buffers.push_back(buffer->data);
  }
  work->stream = stream_;
  comm_ = nullptr;
  std::thread worker([work] {
    (void)cudaSetDevice(work->device);
    if (work->comm != nullptr && work->clean) {
      // Finalize flushes NCCL's work; bounded, with abort as the way out.
      work->stage = "ncclCommFinalize";
      ncclResult_t state = ncclCommFinalize(work->comm);
      if (state == ncclSuccess || state == ncclInProgress) {
        poll_until(
            [&] {
              if (ncclCommGetAsyncError(work->comm, &state) != ncclSuccess) state = ncclSystemError;
              return state != ncclInProgress;
            },
            Deadline::after(kFinalizeTimeout));
      }
      if (state == ncclSuccess) {
        work->stage = "ncclCommDestroy";
        (void)ncclCommDestroy(work->comm);
        work->comm = nullptr;
      }
    }
    if (work->comm != nullptr) {
      work->finalize_failed = work->clean;
      work->stage = "ncclCommAbort (finalize did not complete)";
      (void)ncclCommAbort(work->comm);
    }
    // NCCL's kernels are gone once the abort returns; only then go the buffers they used.
    work->stage = "joining an earlier abort";
    if (work->aborter.joinable()) work->aborter.join();
    work->stage = "freeing buffers";
    if (work->barrier_word != nullptr) (void)cudaFree(work->barrier_word);
    for (void* data : work->device_buffers) (void)cudaFree(data);
    for (void* data : work->host_buffers) (void)cudaFreeHost(data);
    if (work->stream != nullptr) (void)cudaStreamDestroy(work->stream);
    work->done = true;
  });
  const auto started = std::chrono::steady_clock::now();
  const Deadline deadline = Deadline::after(kFinalizeTimeout + std::chrono::seconds(10));
  while (!work->done.load() && !deadline.expired()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const auto waited_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now() - started)
                             .count();
  if (work->done.load()) {
    worker.join();
    MEMLOOM_LOG(kDebug, "released the NCCL communicator of rank "
                            << group_.rank << "/" << group_.size << " in " << waited_ms << " ms"
                            << (!work->clean            ? " (aborted)"
                                : work->finalize_failed ? " (aborted: finalize did not complete)"
                                                        : ""));
  } else {
    MEMLOOM_LOG(kWarn, "releasing an NCCL communicator (rank "
                           << group_.rank << "/" << group_.size << ") did not finish within "
                           << waited_ms << " ms (stuck in " << work->stage.load()
                           << "); left to finish in the background (its GPU buffers stay "
                              "allocated until it does)");
    worker.detach();
  }
}

void NcclCollectives::abort_communicator() {
  if (comm_ == nullptr) return;
  // ncclCommAbort can take seconds while a kernel waits for a peer that never comes; the caller
  // (and the peers, told through the poison mark) need not wait for it.
  ncclComm_t comm = comm_;
  comm_ = nullptr;
  if (aborter_.joinable()) aborter_.join();
  aborter_ = std::thread([comm, device = device_] {
    (void)cudaSetDevice(device);
    (void)ncclCommAbort(comm);
  });
}

void NcclCollectives::fail(Status status, const std::string& message) {
  const std::string text = "collectives of rank " + std::to_string(group_.rank) + "/" +
                           std::to_string(group_.size) + " (NCCL): " + message;
  {
    std::lock_guard<std::mutex> lock(reason_mutex_);
    if (poison_reason_.empty()) poison_reason_ = text;
  }
  poisoned_ = true;
  try {
    bootstrap_.put(kPoisonKey, text);  // first: peers stop waiting while the abort runs
  } catch (const Error&) {
    // The store may be what failed; peers then find out at their own deadline.
  }
  abort_communicator();
  raise(status, text);
}

void NcclCollectives::abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(reason_mutex_);
    if (poison_reason_.empty()) poison_reason_ = "aborted: " + reason;
  }
  poisoned_ = true;
  try {
    bootstrap_.put(kPoisonKey, "rank " + std::to_string(group_.rank) + " aborted: " + reason);
  } catch (const Error&) {
  }
  // An operation in flight on another thread sees the flag and aborts the communicator itself.
  std::unique_lock<std::mutex> lock(op_mutex_, std::try_to_lock);
  if (lock.owns_lock()) abort_communicator();
}

void NcclCollectives::issued(ncclResult_t result, const char* call) {
  if (result == ncclSuccess || result == ncclInProgress) return;
  // A half-issued group cannot be taken back: close it (NCCL's group state is per thread and
  // would capture this thread's later calls), then the communicator goes and peers are told.
  if (in_group_) {
    in_group_ = false;
    (void)ncclGroupEnd();
  }
  fail(Status::kCommunication, std::string(call) + " failed: " + ncclGetErrorString(result));
}

void NcclCollectives::check_usable() {
  if (!poisoned_ && comm_ != nullptr) return;
  std::lock_guard<std::mutex> lock(reason_mutex_);
  raise(Status::kCommunication, "rank " + std::to_string(group_.rank) +
                                    ": the collective group is aborted: " + poison_reason_);
}

bool NcclCollectives::peer_died(std::string* who) const {
  if (group_.pid_of_rank.size() != static_cast<size_t>(group_.size) ||
      group_.node_of_rank.size() != static_cast<size_t>(group_.size)) {
    return false;
  }
  for (int r = 0; r < group_.size; ++r) {
    if (r == group_.rank || group_.node_of_rank[r] != group_.node_of_rank[group_.rank]) continue;
    const int pid = group_.pid_of_rank[r];
    if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH) {
      *who = "rank " + std::to_string(r) + " (pid " + std::to_string(pid) + ")";
      return true;
    }
  }
  return false;
}

bool NcclCollectives::poison_marked(std::string* reason) {
  try {
    *reason = bootstrap_.wait_get(kPoisonKey, Deadline::now());
    return true;
  } catch (const Error&) {
    return false;
  }
}

void NcclCollectives::wait(const char* what, Deadline deadline, Until until) {
  auto next_check = std::chrono::steady_clock::now() + kPeerCheckInterval;
  bool done = poll_until(
      [&] {
        if (poisoned_) {
          std::string reason;
          {
            std::lock_guard<std::mutex> lock(reason_mutex_);
            reason = poison_reason_;
          }
          fail(Status::kCommunication, std::string(what) + ": " + reason);
        }
        ncclResult_t state = ncclSuccess;
        ncclResult_t result = ncclCommGetAsyncError(comm_, &state);
        if (result != ncclSuccess) state = result;
        if (state != ncclSuccess && state != ncclInProgress) {
          const char* detail = ncclGetLastError(comm_);
          fail(Status::kCommunication,
               std::string(what) + ": NCCL reported " + ncclGetErrorString(state) +
                   (detail != nullptr && *detail ? std::string(" (") + detail + ")"
                                                 : std::string()));
        }
        // A non-blocking communicator enqueues its kernels on the stream some time after the
        // call returned; only once it has does an idle stream mean "complete".
        if (state == ncclSuccess && until == Until::kIssued) return true;
        if (state == ncclSuccess) {
          cudaError_t stream_state = cudaStreamQuery(stream_);
          if (stream_state == cudaSuccess) return true;
          if (stream_state != cudaErrorNotReady) {
            (void)cudaGetLastError();
            fail(Status::kDevice,
                 std::string(what) + ": the GPU reported " + cudaGetErrorString(stream_state));
          }
          (void)cudaGetLastError();
        }
        if (std::chrono::steady_clock::now() >= next_check) {
          next_check = std::chrono::steady_clock::now() + kPeerCheckInterval;
          std::string detail;
          if (peer_died(&detail))
            fail(Status::kCommunication, std::string(what) + ": " + detail + " is gone");
          if (poison_marked(&detail)) {
            fail(Status::kCommunication, std::string(what) + ": a peer failed: " + detail);
          }
        }
        return false;
      },
      deadline);
  if (!done) {
    fail(Status::kTimeout, std::string(what) + ": the deadline passed before all " +
                               std::to_string(group_.size) +
                               " ranks completed; the NCCL communicator was aborted");
  }
}

void NcclCollectives::grow(Buffer& buffer, size_t bytes, bool pinned_host) {
  if (bytes <= buffer.size) return;
  size_t size = std::max(kMinimumStaging, buffer.size);
  while (size < bytes) size *= 2;
  void* data = nullptr;
  if (pinned_host) {
    check_cuda(cudaMallocHost(&data, size), "cudaMallocHost (collective staging)");
    if (buffer.data != nullptr) (void)cudaFreeHost(buffer.data);
  } else {
    check_cuda(cudaMalloc(&data, size), "cudaMalloc (collective staging)");
    if (buffer.data != nullptr) (void)cudaFree(buffer.data);
  }
  buffer.data = data;
  buffer.size = size;
}

void NcclCollectives::stage_in(const void* user, size_t bytes) {
  grow(device_send_, bytes, false);
  if (bytes == 0) return;
  if (user == nullptr) raise(Status::kLogic, "collective: null send buffer past the agreement");
  if (is_device_pointer(user)) {
    check_cuda(cudaMemcpyAsync(device_send_.data, user, bytes, cudaMemcpyDefault, stream_),
               "cudaMemcpyAsync (stage in)");
    return;
  }
  grow(host_send_, bytes, true);
  std::memcpy(host_send_.data, user, bytes);
  check_cuda(
      cudaMemcpyAsync(device_send_.data, host_send_.data, bytes, cudaMemcpyHostToDevice, stream_),
      "cudaMemcpyAsync (stage in)");
}

void NcclCollectives::stage_out(void* user, size_t extent, const std::vector<Piece>& pieces) {
  out_user_ = nullptr;
  out_pieces_.clear();
  if (extent == 0) return;
  if (user == nullptr) raise(Status::kLogic, "collective: null receive buffer past the agreement");
  auto* device = static_cast<char*>(device_recv_.data);
  if (is_device_pointer(user)) {
    for (const Piece& piece : pieces) {
      if (piece.bytes == 0) continue;
      check_cuda(cudaMemcpyAsync(static_cast<char*>(user) + piece.offset, device + piece.offset,
                                 piece.bytes, cudaMemcpyDefault, stream_),
                 "cudaMemcpyAsync (stage out)");
    }
    return;
  }
  grow(host_recv_, extent, true);
  check_cuda(cudaMemcpyAsync(host_recv_.data, device, extent, cudaMemcpyDeviceToHost, stream_),
             "cudaMemcpyAsync (stage out)");
  out_user_ = user;
  out_pieces_ = pieces;
}

void NcclCollectives::finish_out() {
  if (out_user_ == nullptr) return;
  for (const Piece& piece : out_pieces_) {
    std::memcpy(static_cast<char*>(out_user_) + piece.offset,
                static_cast<const char*>(host_recv_.data) + piece.offset, piece.bytes);
  }
  out_user_ = nullptr;
  out_pieces_.clear();
}

// The raw allgather under every call's agreement step: no header of its own.
void NcclCollectives::allgather_unchecked(const void* send, void* recv, size_t bytes,
                                          const char* what, Deadline deadline) {
  const size_t total = bytes * static_cast<size_t>(group_.size);
  grow(device_recv_, total, false);
  stage_in(send, bytes);
  issued(ncclAllGather(device_send_.data, device_recv_.data, bytes, ncclUint8, comm_, stream_),
         "ncclAllGather");
  wait(what, deadline, Until::kIssued);  // copies enqueued now land after NCCL's kernel
  stage_out(recv, total, {{0, total}});
  wait(what, deadline, Until::kCompleted);
  finish_out();
}

void NcclCollectives::agree(host::CollectiveHeader header, Deadline deadline) {
  const int n = group_.size;
  header.rank = group_.rank;
  header.seq = next_seq_++;
  const size_t one = host::CollectiveHeader::encoded_bytes(n);
  std::vector<std::byte> mine(one), all(one * static_cast<size_t>(n));
  header.encode(mine.data(), n);
  allgather_unchecked(mine.data(), all.data(), one, "agreeing on a collective's arguments",
                      deadline);
  std::vector<host::CollectiveHeader> headers;
  for (int r = 0; r < n; ++r) {
    headers.push_back(host::CollectiveHeader::decode(all.data() + r * one, n));
  }
  // Every rank judges the same headers, so all reach the same verdict and stay in step.
  host::ShmVerdict verdict = host::check_agreement(headers);
  if (!verdict.ok) raise(Status::kInvalidInput, verdict.message);
}

template <typename Body>
void NcclCollectives::guarded(Body&& body) {
  std::lock_guard<std::mutex> lock(op_mutex_);
  check_usable();
  DeviceGuard guard(device_);
  try {
    // A peer that failed may have left NCCL's kernels able to pair with ours for a while: its
    // mark is checked before starting, so calls after a failure fail on every rank.
    std::string reason;
    if (poison_marked(&reason)) {
      fail(Status::kCommunication, "the collective group is aborted: a peer failed: " + reason);
    }
    body();
  } catch (const Error& error) {
    // Disagreeing arguments are found by every rank alike: the group stays usable. Everything
    // else has already poisoned it (fail()), or does so here.
    if (error.status() == Status::kInvalidInput || poisoned_) throw;
    fail(error.status(), error.what());
  }
}

void NcclCollectives::run(const hal::CollectiveCall& call, Deadline deadline) {
  guarded([&] {
    // The agreement's allgather is itself a barrier.
    agree(host::header_for(call, group_.rank, group_.size), deadline);
    switch (call.kind) {
      case hal::CollectiveKind::kBarrier:
        return;
      case hal::CollectiveKind::kBroadcast:
        return issue_broadcast(call, deadline);
      case hal::CollectiveKind::kAllgather:
        if (call.bytes > 0) {
          allgather_unchecked(call.send, call.recv, call.bytes, "allgather", deadline);
        }
        return;
      case hal::CollectiveKind::kAllgatherv:
        return issue_broadcasts_per_rank(call, deadline);
      case hal::CollectiveKind::kAlltoallv:
        return issue_sends_and_receives(call, deadline);
    }
  });
}

void NcclCollectives::issue_broadcast(const hal::CollectiveCall& call, Deadline deadline) {
  const size_t bytes = call.bytes;
  const int root = call.root;
  if (bytes == 0) return;
  grow(device_recv_, bytes, false);
  if (group_.rank == root) stage_in(call.send, bytes);
  const void* send = group_.rank == root ? device_send_.data : device_recv_.data;
  issued(ncclBroadcast(send, device_recv_.data, bytes, ncclUint8, root, comm_, stream_),
         "ncclBroadcast");
  wait("broadcast", deadline, Until::kIssued);
  if (group_.rank != root) stage_out(call.recv, bytes, {{0, bytes}});
  wait("broadcast", deadline, Until::kCompleted);
  if (group_.rank != root) finish_out();
}

void NcclCollectives::issue_broadcasts_per_rank(const hal::CollectiveCall& call,
                                                Deadline deadline) {
  const int n = group_.size;
  const size_t* recv_counts = call.recv_counts;
  const size_t* recv_displs = call.recv_displs;
  const size_t extent = host::recv_extent(call, group_.rank, n);
  if (extent == 0) return;
  std::vector<Piece> pieces;
  for (int r = 0; r < n; ++r) {
    if (recv_counts[r] > 0) pieces.push_back({recv_displs[r], recv_counts[r]});
  }
  grow(device_recv_, extent, false);
  stage_in(call.send, recv_counts[group_.rank]);
  auto* device = static_cast<char*>(device_recv_.data);
  issued(ncclGroupStart(), "ncclGroupStart");
  in_group_ = true;
  for (int r = 0; r < n; ++r) {
    if (recv_counts[r] == 0) continue;
    const void* from = r == group_.rank ? device_send_.data : device + recv_displs[r];
    issued(
        ncclBroadcast(from, device + recv_displs[r], recv_counts[r], ncclUint8, r, comm_, stream_),
        "ncclBroadcast (allgatherv)");
  }
  in_group_ = false;
  issued(ncclGroupEnd(), "ncclGroupEnd (allgatherv)");
  wait("allgatherv", deadline, Until::kIssued);
  stage_out(call.recv, extent, pieces);
  wait("allgatherv", deadline, Until::kCompleted);
  finish_out();
}

void NcclCollectives::issue_sends_and_receives(const hal::CollectiveCall& call, Deadline deadline) {
  const int n = group_.size;
  const size_t* send_counts = call.send_counts;
  const size_t* send_displs = call.send_displs;
  const size_t* recv_counts = call.recv_counts;
  const size_t* recv_displs = call.recv_displs;
  const size_t send_extent = host::send_extent(call, group_.rank, n);
  const size_t recv_extent = host::recv_extent(call, group_.rank, n);
  if (send_extent == 0 && recv_extent == 0) return;
  std::vector<Piece> pieces;
  for (int p = 0; p < n; ++p) {
    if (recv_counts[p] > 0) pieces.push_back({recv_displs[p], recv_counts[p]});
  }
  grow(device_recv_, recv_extent, false);
  stage_in(call.send, send_extent);
  auto* out = static_cast<char*>(device_send_.data);
  auto* in = static_cast<char*>(device_recv_.data);
  issued(ncclGroupStart(), "ncclGroupStart");
  in_group_ = true;
  for (int p = 0; p < n; ++p) {
    if (send_counts[p] > 0) {
      issued(ncclSend(out + send_displs[p], send_counts[p], ncclUint8, p, comm_, stream_),
             "ncclSend (alltoallv)");
    }
    if (recv_counts[p] > 0) {
      issued(ncclRecv(in + recv_displs[p], recv_counts[p], ncclUint8, p, comm_, stream_),
             "ncclRecv (alltoallv)");
    }
  }
  in_group_ = false;
  issued(ncclGroupEnd(), "ncclGroupEnd (alltoallv)");
  wait("alltoallv", deadline, Until::kIssued);
  stage_out(call.recv, recv_extent, pieces);
  wait("alltoallv", deadline, Until::kCompleted);
  finish_out();
}

}  // namespace memloom::cuda
