// The rma data path (ucx_data_path.h): one transfer() call's ops on one UCX endpoint, issued as
// ucp_put_nbx/ucp_get_nbx without waiting, then one endpoint flush, so a batch of small ops costs
// one round trip, not one each.
//
// Order: UCX does not order RMA operations among themselves, but transfer() promises that ops run
// in order (a read sees an earlier write of its call). So an op that overlaps an earlier op of the
// batch, in remote or in local memory, first waits for everything issued before it (a flush):
// independent ops stream, dependent ones are ordered.
#pragma once

#include <memory>
#include <vector>

#include "hw/hal/transport.h"
#include "hw/host/ucx_endpoints.h"
#include "hw/host/ucx_worker.h"
#include "memloom/deadline.h"

namespace memloom::host {

// Runs `work` (ops of at least one byte) against `peer`, `keys[i]` the remote key of work[i]'s
// range. On a timeout, a failure or an interruption, lets a live peer's requests under way end
// (UcxWorker::progress_while_ending), then closes the endpoint by force, so that they let go of the
// caller's buffers, before it raises.
void run_transfer_batch(UcxWorker& worker, UcxPeer& peer,
                        const std::vector<const hal::TransferOp*>& work,
                        const std::vector<UcxRemoteKey>& keys, Deadline deadline);

}  // namespace memloom::host
