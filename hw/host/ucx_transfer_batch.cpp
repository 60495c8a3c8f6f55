#include "hw/host/ucx_transfer_batch.h"

#include <ucp/api/ucp.h>

#include <chrono>

#include "memloom/error.h"
#include "src/base/log.h"
#include "src/base/range_map.h"

namespace memloom::host {
namespace {

// After a failure (the endpoint closed by force), how long UCX gets to hand back the requests.
constexpr auto kReleaseTimeout = std::chrono::seconds(2);

class TransferBatch {
 public:
  TransferBatch(UcxWorker& worker, UcxPeer& peer)
      : worker_(worker), peer_(peer), ep_(peer.ep()), completion_(new UcxRequestCount) {
    param_.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param_.cb.send = done;
    param_.user_data = completion_;
  }

  // Waits (briefly) for requests still in flight; they are only left behind after a failure.
  ~TransferBatch() {
    const bool released = worker_.progress_until(
        [this] { return completion_->outstanding.load() == 0; }, Deadline::after(kReleaseTimeout));
    if (released) {
      delete completion_;
    } else {
      // UCX may still call back into it: leaking a few bytes beats a use after free.
      MEMLOOM_LOG(kError, "transport: UCX did not release a failed transfer's requests");
    }
  }

  // Issues one op; false when the batch already failed or the deadline passed.
  bool issue(const hal::TransferOp& op, ucp_rkey_h key, Deadline deadline) {
    const auto local = reinterpret_cast<uintptr_t>(op.local_address);
    if (remote_ranges_.overlapping(op.remote_address, op.bytes) != nullptr ||
        local_ranges_.overlapping(local, op.bytes) != nullptr) {
      if (!complete(deadline)) return false;
      remote_ranges_ = {};
      local_ranges_ = {};
    }
    remote_ranges_.insert(op.remote_address, op.bytes);
    local_ranges_.insert(local, op.bytes);
    return track(
        op.direction == hal::TransferOp::Direction::kWrite
            ? ucp_put_nbx(ep_, op.local_address, op.bytes, op.remote_address, key, &param_)
            : ucp_get_nbx(ep_, op.local_address, op.bytes, op.remote_address, key, &param_));
  }

  // Flushes the endpoint and waits for every op; false at the deadline or on a failure.
  bool complete(Deadline deadline) {
    if (!track(ucp_ep_flush_nbx(ep_, &param_))) return false;
    const bool finished = worker_.progress_until(
        [this] {
          return completion_->outstanding.load() == 0 || completion_->first_error.load() != UCS_OK;
        },
        deadline, UcxWorker::Interruptible::kYes);
    return finished && completion_->first_error.load() == UCS_OK;
  }

  // After the call gave up (ucx_transfer_batch.h): why it failed, the first error of an op or
  // flush, else the endpoint's, else UCS_OK (a timeout).
  ucs_status_t abandon() {
    if (!peer_.failed()) {
      worker_.progress_while_ending([this] { return completion_->outstanding.load(); });
    }
    ucs_status_t why = completion_->first_error.load();
    if (why == UCS_OK && peer_.failed()) why = peer_.failure();
    peer_.force_close();
    return why;
  }

 private:
  static void done(void* request, ucs_status_t status, void* user_data) {
    auto* completion = static_cast<UcxRequestCount*>(user_data);
    if (status != UCS_OK) completion->fail(status);
    ucp_request_free(request);
    completion->outstanding.fetch_sub(1);
  }

  bool track(ucs_status_ptr_t request) {
    if (UCS_PTR_IS_ERR(request)) {
      completion_->fail(UCS_PTR_STATUS(request));
      return false;
    }
    // A request completes through done(); null means it completed at once.
    if (request != nullptr) completion_->outstanding.fetch_add(1);
    return completion_->first_error.load() == UCS_OK;
  }

  UcxWorker& worker_;
  UcxPeer& peer_;
  ucp_ep_h ep_;
  UcxRequestCount* completion_;  // shared with UCX's callbacks; leaked if they never come
  ucp_request_param_t param_{};  // every request's: done() with completion_
  base::RangeMap<> remote_ranges_, local_ranges_;  // what this epoch of the batch touched
};

}  // namespace

void run_transfer_batch(UcxWorker& worker, UcxPeer& peer,
                        const std::vector<const hal::TransferOp*>& work,
                        const std::vector<UcxRemoteKey>& keys, Deadline deadline) {
  TransferBatch batch(worker, peer);
  bool completed = false;
  try {
    bool issued = true;
    for (size_t i = 0; i < work.size() && issued; ++i) {
      issued = batch.issue(*work[i], keys[i].get(), deadline);
    }
    completed = issued && batch.complete(deadline);
  } catch (const Error&) {
    batch.abandon();  // interrupted by the caller: nothing else throws here
    throw;
  }
  if (!completed) peer.raise_failed(batch.abandon());
}

}  // namespace memloom::host
