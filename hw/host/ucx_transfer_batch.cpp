#include "hw/host/ucx_transfer_batch.h"

#include <atomic>
#include <chrono>

#include "src/base/log.h"

namespace memloom::host {
namespace {

// After a failure (the endpoint was closed by force), how long to wait for UCX to hand back the
// requests still in flight before leaving them to it.
constexpr auto kReleaseTimeout = std::chrono::seconds(2);

}  // namespace

struct UcxTransferBatch::Completion {
  std::atomic<size_t> outstanding{0};
  std::atomic<ucs_status_t> first_error{UCS_OK};
  void fail(ucs_status_t status) {
    ucs_status_t expected = UCS_OK;
    first_error.compare_exchange_strong(expected, status);
  }
};

UcxTransferBatch::UcxTransferBatch(UcxWorker& worker, ucp_ep_h ep)
    : worker_(worker), ep_(ep), completion_(new Completion) {}

UcxTransferBatch::~UcxTransferBatch() {
  Completion* completion = completion_;
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
  auto* completion = static_cast<Completion*>(user_data);
  if (status != UCS_OK) completion->fail(status);
  ucp_request_free(request);
  completion->outstanding.fetch_sub(1);
}

ucs_status_t UcxTransferBatch::status() const {
  return completion_->first_error.load();
}

void UcxTransferBatch::let_moving_requests_end() {
  Completion* completion = completion_;
  worker_.progress_while_ending([completion] { return completion->outstanding.load(); });
}

ucp_request_param_t UcxTransferBatch::param() {
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.send = done;
  param.user_data = completion_;
  return param;
}

bool UcxTransferBatch::track(ucs_status_ptr_t request) {
  if (UCS_PTR_IS_ERR(request)) {
    completion_->fail(UCS_PTR_STATUS(request));
    return false;
  }
  // A request completes through done(); null means it completed at once.
  if (request != nullptr) completion_->outstanding.fetch_add(1);
  return status() == UCS_OK;
}

bool UcxTransferBatch::order(uint64_t remote, const void* local, size_t bytes, Deadline deadline) {
  const auto local_start = reinterpret_cast<uintptr_t>(local);
  if (remote_ranges_.overlapping(remote, bytes) != nullptr ||
      local_ranges_.overlapping(local_start, bytes) != nullptr) {
    if (!complete(deadline)) return false;
    remote_ranges_ = {};
    local_ranges_ = {};
  }
  remote_ranges_.insert(remote, bytes);
  local_ranges_.insert(local_start, bytes);
  return true;
}

bool UcxTransferBatch::put(const void* local, size_t bytes, uint64_t remote, ucp_rkey_h key,
                           Deadline deadline) {
  if (!order(remote, local, bytes, deadline)) return false;
  ucp_request_param_t request_param = param();
  return track(ucp_put_nbx(ep_, local, bytes, remote, key, &request_param));
}

bool UcxTransferBatch::get(void* local, size_t bytes, uint64_t remote, ucp_rkey_h key,
                           Deadline deadline) {
  if (!order(remote, local, bytes, deadline)) return false;
  ucp_request_param_t request_param = param();
  return track(ucp_get_nbx(ep_, local, bytes, remote, key, &request_param));
}

bool UcxTransferBatch::complete(Deadline deadline) {
  ucp_request_param_t request_param = param();
  if (!track(ucp_ep_flush_nbx(ep_, &request_param))) return false;
  Completion* completion = completion_;
  const bool finished = worker_.progress_until(
      [completion] {
        return completion->outstanding.load() == 0 || completion->first_error.load() != UCS_OK;
      },
      deadline, UcxWorker::Interruptible::kYes);
  return finished && status() == UCS_OK;
}

}  // namespace memloom::host
