// One transfer() call's ops on one UCX endpoint: issued as ucp_put_nbx/ucp_get_nbx without
// waiting, then one endpoint flush, so a batch of small ops costs one round trip, not one each.
//
// Order: UCX does not order RMA operations among themselves, but transfer() promises that ops run
// in order (a read sees an earlier write of its call). So an op that overlaps an earlier op of the
// batch, in remote or in local memory, first waits for everything issued before it (a flush):
// independent ops stream, dependent ones are ordered.
#pragma once

#include <ucp/api/ucp.h>

#include "hw/hal/transport.h"
#include "hw/host/ucx_endpoints.h"
#include "hw/host/ucx_worker.h"
#include "memloom/deadline.h"
#include "src/base/range_map.h"

namespace memloom::host {

class UcxTransferBatch {
 public:
  UcxTransferBatch(UcxWorker& worker, UcxPeer& peer);
  // Waits (briefly) for requests still in flight; they are only left behind after a failure.
  ~UcxTransferBatch();
  UcxTransferBatch(const UcxTransferBatch&) = delete;
  UcxTransferBatch& operator=(const UcxTransferBatch&) = delete;

  // Issues one op; false when the batch already failed or the deadline passed.
  bool issue(const hal::TransferOp& op, ucp_rkey_h key, Deadline deadline);
  // Flushes the endpoint and waits for every op; false at the deadline or on a failure.
  bool complete(Deadline deadline);

  // After the call gave up: lets a live peer's requests under way end
  // (UcxWorker::progress_while_ending), then closes the endpoint by force, so the requests let go
  // of the caller's buffers. Returns why the batch failed: the first error of an op or flush, else
  // the endpoint's failure, else UCS_OK (a timeout).
  ucs_status_t abandon();

 private:
  static void done(void* request, ucs_status_t status, void* user_data);
  bool track(ucs_status_ptr_t request);

  UcxWorker& worker_;
  UcxPeer& peer_;
  ucp_ep_h ep_;
  UcxRequestCount* completion_;  // shared with UCX's callbacks; leaked if they never come
  ucp_request_param_t param_{};  // every request's: done() with completion_
  base::RangeMap<> remote_ranges_, local_ranges_;  // what this epoch of the batch touched
};

}  // namespace memloom::host
