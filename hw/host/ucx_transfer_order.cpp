#include "hw/host/ucx_transfer_order.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace memloom::host {
namespace {

using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;  // start, bytes

bool any_overlap(Ranges& ranges) {
  if (!std::is_sorted(ranges.begin(), ranges.end())) std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i - 1].first + ranges[i - 1].second > ranges[i].first) return true;
  }
  return false;
}

uintptr_t local_start(const hal::TransferOp& op) {
  return reinterpret_cast<uintptr_t>(op.local_address);
}

}  // namespace

UcxTransferOrder::UcxTransferOrder(const std::vector<const hal::TransferOp*>& work) {
  if (work.size() < 2) return;
  Ranges remote, local;
  remote.reserve(work.size());
  local.reserve(work.size());
  for (const hal::TransferOp* op : work) {
    remote.emplace_back(op->remote_address, op->bytes);
    local.emplace_back(local_start(*op), op->bytes);
  }
  any_overlap_ = any_overlap(remote) || any_overlap(local);
}

bool UcxTransferOrder::must_wait(const hal::TransferOp& op) const {
  return any_overlap_ && (remote_.overlapping(op.remote_address, op.bytes) != nullptr ||
                          local_.overlapping(local_start(op), op.bytes) != nullptr);
}

void UcxTransferOrder::add(const hal::TransferOp& op) {
  if (!any_overlap_) return;
  remote_.insert(op.remote_address, op.bytes);
  local_.insert(local_start(op), op.bytes);
}

void UcxTransferOrder::restart() {
  remote_ = {};
  local_ = {};
}

}  // namespace memloom::host
