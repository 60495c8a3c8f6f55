#include "hw/host/ucx_transfer_batch.h"

#include <chrono>

#include "src/base/log.h"

namespace memloom::host {
namespace {

// After a failure (the endpoint was closed by force), how long to wait for UCX to hand back the
// requests still in flight before leaving them to it.
constexpr auto kReleaseTimeout = std::chrono::seconds(2);

}  // namespace

UcxTransferBatch::UcxTransferBatch(UcxWorker& worker, UcxPeer& peer)
    : worker_(worker), peer_(peer), ep_(peer.ep()), completion_(new UcxRequestCount) {
  param_.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param_.cb.send = done;
  param_.user_data = completion_;
}

UcxTransferBatch::~UcxTransferBatch() {
  UcxRequestCount* completion = completion_;
  const bool released =
      worker_.progress_until([completion] { return completion->outstanding.load() == 0; },
                             Deadline::after(kReleaseTimeout));
  if (released) {
    delete completion;
  } else {
    // UCX may still call back into it: leaking a few bytes beats a use after free.
    MEMLOOM_LOG(kError, "transport: UCX did not release a failed transfer's requests");
  }
}

void UcxTransferBatch::done(void* request, ucs_status_t status, void* user_data) {
  auto* completion = static_cast<UcxRequestCount*>(user_data);
  if (status != UCS_OK) completion->fail(status);
  ucp_request_free(request);
  completion->outstanding.fetch_sub(1);
}

ucs_status_t UcxTransferBatch::abandon() {
  UcxRequestCount* completion = completion_;
  if (!peer_.failed()) {
    worker_.progress_while_ending([completion] { return completion->outstanding.load(); });
  }
  ucs_status_t why = completion->first_error.load();
  if (why == UCS_OK && peer_.failed()) why = peer_.failure();
  peer_.force_close();
  return why;
}

bool UcxTransferBatch::track(ucs_status_ptr_t request) {
  if (UCS_PTR_IS_ERR(request)) {
    completion_->fail(UCS_PTR_STATUS(request));
    return false;
  }
  // A request completes through done(); null means it completed at once.
  if (request != nullptr) completion_->outstanding.fetch_add(1);
  return completion_->first_error.load() == UCS_OK;
}

bool UcxTransferBatch::issue(const hal::TransferOp& op, ucp_rkey_h key, Deadline deadline) {
  // Ordered after the ops before it when it overlaps one of them.
  const auto local = reinterpret_cast<uintptr_t>(op.local_address);
  if (remote_ranges_.overlapping(op.remote_address, op.bytes) != nullptr ||
      local_ranges_.overlapping(local, op.bytes) != nullptr) {
    if (!complete(deadline)) return false;
    remote_ranges_ = {};
    local_ranges_ = {};
  }
  remote_ranges_.insert(op.remote_address, op.bytes);
  local_ranges_.insert(local, op.bytes);
  return track(op.direction == hal::TransferOp::Direction::kWrite
                   ? ucp_put_nbx(ep_, op.local_address, op.bytes, op.remote_address, key, &param_)
                   : ucp_get_nbx(ep_, op.local_address, op.bytes, op.remote_address, key, &param_));
}

bool UcxTransferBatch::complete(Deadline deadline) {
  if (!track(ucp_ep_flush_nbx(ep_, &param_))) return false;
  UcxRequestCount* completion = completion_;
  const bool finished = worker_.progress_until(
      [completion] {
        return completion->outstanding.load() == 0 || completion->first_error.load() != UCS_OK;
      },
      deadline, UcxWorker::Interruptible::kYes);
  return finished && completion->first_error.load() == UCS_OK;
}

}  // namespace memloom::host
