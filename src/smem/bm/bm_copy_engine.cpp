#include "src/smem/bm/bm_copy_engine.h"

#include <algorithm>
#include <map>

#include "memloom/error.h"
#include "src/base/interrupt_check.h"
#include "src/base/log.h"

namespace memloom::smem {
namespace {

constexpr size_t kStagingChunk = 8u << 20;  // bounds the host buffer of a remote-to-remote copy

bool continues(const CopySide& before, size_t bytes, const CopySide& after) {
  return before.space == after.space && before.rank == after.rank &&
         before.remote == after.remote && before.address + bytes == after.address;
}

}  // namespace

std::vector<ResolvedCopy> merge_contiguous(const std::vector<ResolvedCopy>& copies) {
  std::vector<ResolvedCopy> merged;
  merged.reserve(copies.size());
  for (const ResolvedCopy& copy : copies) {
    if (!merged.empty()) {
      ResolvedCopy& last = merged.back();
      if (continues(last.src, last.bytes, copy.src) && continues(last.dst, last.bytes, copy.dst)) {
        last.bytes += copy.bytes;
        continue;
      }
    }
    merged.push_back(copy);
  }
  return merged;
}

BmCopyEngine::BmCopyEngine(hal::Platform& platform, int device, hal::Transport* transport,
                           std::vector<std::string> peer_addresses,
                           std::chrono::milliseconds timeout)
    : transport_(transport),
      peer_addresses_(std::move(peer_addresses)),
      timeout_(timeout),
      host_copies_(platform.memory_domain().memory_is_host_accessible()),
      sync_stream_(platform.create_stream(device)),
      async_stream_(platform.create_stream(device)) {}

BmCopyEngine::~BmCopyEngine() {
  // Outstanding asynchronous copies finish (or fail) before the memory they touch goes away.
  try {
    std::lock_guard<std::mutex> lock(async_mutex_);
    async_stream_->synchronize(deadline());
  } catch (const std::exception& error) {
    MEMLOOM_LOG(kWarn, "smem_bm: an asynchronous copy failed while destroying: " << error.what());
  }
}

BmCopyEngine::Plan BmCopyEngine::plan(const std::vector<ResolvedCopy>& copies) const {
  Plan plan;
  std::map<int, size_t> batch_of_rank;
  auto add_op = [&](int rank, hal::TransferOp op) {
    auto [it, inserted] = batch_of_rank.emplace(rank, plan.peers.size());
    if (inserted) plan.peers.push_back(PeerBatch{rank, {}});
    plan.peers[it->second].ops.push_back(op);
  };
  for (const ResolvedCopy& copy : merge_contiguous(copies)) {
    if (!copy.src.remote && !copy.dst.remote) {
      plan.local.push_back(copy);
    } else if (copy.src.remote && copy.dst.remote) {
      plan.staged.push_back(copy);
    } else if (copy.dst.remote) {
      add_op(copy.dst.rank, hal::TransferOp{hal::TransferOp::Direction::kWrite, copy.dst.address,
                                            reinterpret_cast<void*>(copy.src.address), copy.bytes});
    } else {
      add_op(copy.src.rank, hal::TransferOp{hal::TransferOp::Direction::kRead, copy.src.address,
                                            reinterpret_cast<void*>(copy.dst.address), copy.bytes});
    }
  }
  return plan;
}

void BmCopyEngine::transfer(int rank, const std::vector<hal::TransferOp>& ops) const {
  if (transport_ == nullptr) raise(Status::kLogic, "no transport for a copy to another node");
  const std::string& peer = peer_addresses_.at(static_cast<size_t>(rank));
  try {
    transport_->transfer(peer, ops, deadline());
  } catch (const Error& error) {
    // Bounds were checked here, so a refusal by the peer means its memory is not exposed: the
    // rank has not joined or has left.
    if (error.status() == Status::kInvalidInput || error.status() == Status::kNotFound) {
      raise(Status::kNotFound, "rank " + std::to_string(rank) + " (on another node, " + peer +
                                   ") refused the copy: it has not joined or has left (" +
                                   error.what() + ")");
    }
    raise(error.status(), "copy to/from rank " + std::to_string(rank) + " on another node (" +
                              peer + ") failed: " + error.what());
  }
}

void BmCopyEngine::staged_copy(const ResolvedCopy& copy) const {
  std::vector<char> buffer(std::min(copy.bytes, kStagingChunk));
  for (size_t done = 0; done < copy.bytes; done += buffer.size()) {
    size_t piece = std::min(buffer.size(), copy.bytes - done);
    transfer(copy.src.rank, {hal::TransferOp{hal::TransferOp::Direction::kRead,
                                             copy.src.address + done, buffer.data(), piece}});
    transfer(copy.dst.rank, {hal::TransferOp{hal::TransferOp::Direction::kWrite,
                                             copy.dst.address + done, buffer.data(), piece}});
  }
}

// A copy between two ranges mapped here, in stream order (the emulated backend's stream copy
// splits large copies over two threads itself).
void BmCopyEngine::enqueue_local(hal::Stream& stream, const ResolvedCopy& copy) {
  stream.copy(reinterpret_cast<void*>(copy.dst.address),
              reinterpret_cast<const void*>(copy.src.address), copy.bytes);
}

void BmCopyEngine::run(const std::vector<ResolvedCopy>& copies, bool async) {
  Plan work = plan(copies);
  if (async) {
    std::lock_guard<std::mutex> lock(async_mutex_);
    for (const ResolvedCopy& copy : work.local) enqueue_local(*async_stream_, copy);
    for (PeerBatch& batch : work.peers) {
      async_stream_->host_function(
          [this, rank = batch.rank, ops = std::move(batch.ops)] { transfer(rank, ops); });
    }
    for (const ResolvedCopy& copy : work.staged) {
      async_stream_->host_function([this, copy] { staged_copy(copy); });
    }
    return;
  }
  if (host_copies_ && work.peers.empty() && work.staged.empty()) {
    // Both sides of every copy are host-visible memory mapped here: the copies run on this
    // thread. Through the stream they would cost two thread hand-offs (enqueue, then wake this
    // thread): ~5 us per copy, and under load a scheduler period when the woken worker, which
    // has just copied for milliseconds, waits for a core.
    for (const ResolvedCopy& copy : work.local) {
      copier_.copy(reinterpret_cast<void*>(copy.dst.address),
                   reinterpret_cast<const void*>(copy.src.address), copy.bytes);
    }
    return;
  }
  // Another thread's synchronous copy of this object may hold the stream while it waits on a peer.
  auto lock = base::lock_interruptibly(sync_mutex_, deadline(),
                                       "another thread's synchronous copy of this BM object");
  for (const ResolvedCopy& copy : work.local) enqueue_local(*sync_stream_, copy);
  // Network transfers overlap the stream's copies; the stream is drained even when one fails.
  try {
    for (const PeerBatch& batch : work.peers) transfer(batch.rank, batch.ops);
    for (const ResolvedCopy& copy : work.staged) staged_copy(copy);
  } catch (...) {
    try {
      sync_stream_->synchronize(deadline());
    } catch (const std::exception& error) {
      MEMLOOM_LOG(kWarn, "smem_bm: a local copy failed too: " << error.what());
    }
    throw;
  }
  sync_stream_->synchronize(deadline());
}

void BmCopyEngine::wait() {
  std::lock_guard<std::mutex> lock(async_mutex_);
  async_stream_->synchronize(deadline());
}

}  // namespace memloom::smem
