#include "hw/host/ucx_region_registry.h"

#include <chrono>
#include <utility>
#include <vector>

#include "hw/host/ucx_messages.h"
#include "memloom/error.h"
#include "src/base/hex.h"
#include "src/base/log.h"

namespace memloom::host {
namespace {

// How long withdraw() waits for peers to confirm a revocation (a live peer answers within a round
// trip; a stopped one would keep it waiting), and for am copies into or out of the range (one ends
// within the time its bytes take; the bound is for a stalled peer's rendezvous).
constexpr auto kRevokeTimeout = std::chrono::seconds(2);
constexpr auto kCopyTimeout = std::chrono::seconds(10);

using base::hex;
namespace msg = ucx_messages;

void unmap(ucp_context_h context, ucp_mem_h memory) {
  if (memory == nullptr) return;  // staged device memory was never registered
  ucs_status_t status = ucp_mem_unmap(context, memory);
  if (status != UCS_OK) MEMLOOM_LOG(kWarn, ucx_error("transport: ucp_mem_unmap", status));
}

}  // namespace

void UcxRegionRegistry::unmap_all() {
  base::RangeMap<std::shared_ptr<Region>> regions;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::swap(regions, regions_);
  }
  for (const auto& [start, interval] : regions) unmap(worker_.context(), interval.payload->memory);
}

void UcxRegionRegistry::expose(void* address, size_t size) {
  MEMLOOM_CHECK_ARG(address != nullptr && size > 0, "expose needs a non-null address and a size");
  const auto start = reinterpret_cast<uintptr_t>(address);
  MEMLOOM_CHECK_ARG(start + size > start, "expose: the range wraps around the address space");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (const auto* clash = regions_.overlapping(start, size)) {
      if (clash->is(start, size)) return;  // exposing the same range again is harmless
      raise(Status::kInvalidInput, "expose: [" + hex(start) + ", +" + std::to_string(size) +
                                       ") overlaps a range exposed before");
    }
  }
  auto region = std::make_shared<Region>();
  // Registration (pinning, on RDMA transports) may be slow: outside the lock. None if staged.
  if (!staging_.needs_staging(address)) {
    ucp_mem_map_params_t params{};
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    params.address = address;
    params.length = size;
    ucs_status_t status = ucp_mem_map(worker_.context(), &params, &region->memory);
    if (status != UCS_OK) {
      raise(Status::kCommunication,
            ucx_error("expose: registering [" + hex(start) + ", +" + std::to_string(size) + ")",
                      status));
    }
    void* packed = nullptr;
    size_t packed_size = 0;
    status = ucp_rkey_pack(worker_.context(), region->memory, &packed, &packed_size);
    if (status != UCS_OK) {
      unmap(worker_.context(), region->memory);
      raise(Status::kCommunication, ucx_error("expose: packing the remote key", status));
    }
    region->packed_key.assign(static_cast<const char*>(packed), packed_size);
    ucp_rkey_buffer_release(packed);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (regions_.insert(start, size, region) != nullptr) {
    unmap(worker_.context(), region->memory);  // another thread exposed an overlapping range
    raise(Status::kInvalidInput, "expose: [" + hex(start) + ", +" + std::to_string(size) +
                                     ") overlaps a range exposed meanwhile");
  }
}

void UcxRegionRegistry::withdraw(void* address) {
  const auto start = reinterpret_cast<uintptr_t>(address);
  std::shared_ptr<Region> region;
  std::vector<std::pair<uint64_t, ucp_ep_h>> revocations;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto* interval = regions_.find(start);
    if (interval == nullptr) {
      raise(Status::kInvalidInput, "withdraw: nothing was exposed at " + hex(start));
    }
    region = interval->payload;
    regions_.erase(start);  // from here on, requests for the range are refused
    for (ucp_ep_h holder : region->holders) {
      const uint64_t id = next_revoke_id_++;
      unconfirmed_.emplace(id, holder);
      revocations.emplace_back(id, holder);
    }
  }
  for (const auto& [id, holder] : revocations) {
    msg::send(holder, msg::kRevoke, msg::encode(msg::RevokeHeader{id, start}, own_address_),
              /*reply=*/true);
  }
  auto confirmed = [&] {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& revocation : revocations) {
      if (unconfirmed_.count(revocation.first) != 0) return false;
    }
    return true;
  };
  if (!worker_.progress_until(confirmed, Deadline::after(kRevokeTimeout))) {
    MEMLOOM_LOG(kWarn, "transport: withdrawing " << hex(start)
                                                 << ": a peer did not confirm the revocation");
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& revocation : revocations) unconfirmed_.erase(revocation.first);
  }
  // No new hold starts (the region left the map); copies running end first.
  if (!worker_.progress_until([&] { return region->copies.load() == 0; },
                              Deadline::after(kCopyTimeout))) {
    MEMLOOM_LOG(kError, "transport: withdrawing " << hex(start)
                                                  << ": a copy into or out of it did not end");
  }
  unmap(worker_.context(), region->memory);
}

UcxRegionRegistry::Hold UcxRegionRegistry::hold(uint64_t address, uint64_t bytes) {
  if (bytes == 0) return {};
  std::lock_guard<std::mutex> lock(mutex_);
  const auto* interval = regions_.find_containing(address, bytes);  // none for a range that wraps
  if (interval == nullptr) return {};
  std::shared_ptr<Region> region = interval->payload;
  region->copies.fetch_add(1);
  return {std::shared_ptr<void>(region.get(), [region](void*) { region->copies.fetch_sub(1); }),
          interval->start, interval->start + interval->size, region->memory == nullptr};
}

void UcxRegionRegistry::answer_request(const void* data, size_t length, ucp_ep_h reply_ep) {
  auto request = msg::decode<msg::RegionRequest>(data, length);
  if (!request || reply_ep == nullptr) {
    MEMLOOM_LOG(kWarn, "transport: dropped a malformed region request");
    return;
  }
  msg::RegionReplyHeader reply{request->request_id, 0, 0, 0, 0};
  std::string tail;
  const bool admitted = gate_.admitted(reply_ep);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t address = request->address, bytes = request->bytes;
    const auto* interval = regions_.find_containing(address, bytes);  // none if it wraps
    if (!admitted) {
      reply.status = static_cast<uint32_t>(Status::kCommunication);
      tail = "refused by " + own_address_ + ": the endpoint has not proven the job secret";
    } else if (!serves_keys_) {
      reply.status = static_cast<uint32_t>(Status::kNotSupported);
      tail = own_address_ +
             " serves no remote keys: its UCX has no RDMA transport, so it serves the am data "
             "path only (UCX's software RMA, which checks no remote key, is off there)";
    } else if (interval == nullptr) {
      reply.status = static_cast<uint32_t>(Status::kInvalidInput);
      tail = "[" + hex(address) + ", +" + std::to_string(bytes) +
             ") refused: the range is not inside memory exposed by " + own_address_;
    } else if (interval->payload->memory == nullptr) {
      reply.status = static_cast<uint32_t>(Status::kNotSupported);
      tail = "[" + hex(address) + ", +" + std::to_string(bytes) + ") at " + own_address_ +
             " is device memory its UCX cannot register: it is staged through host memory and "
             "served on the am data path only";
    } else {
      interval->payload->holders.insert(reply_ep);
      reply.base = interval->start;
      reply.size = interval->size;
      tail = interval->payload->packed_key;
    }
  }
  msg::send(reply_ep, msg::kRegionReply, msg::encode(reply, tail), /*reply=*/false);
}

void UcxRegionRegistry::take_ack(const void* data, size_t length, ucp_ep_h) {
  auto ack = msg::decode<msg::RevokeAck>(data, length);
  if (!ack) return;
  std::lock_guard<std::mutex> lock(mutex_);
  unconfirmed_.erase(ack->revoke_id);
}

void UcxRegionRegistry::forget_holder(ucp_ep_h ep) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [start, interval] : regions_) interval.payload->holders.erase(ep);
  std::erase_if(unconfirmed_, [ep](const auto& revocation) { return revocation.second == ep; });
}

}  // namespace memloom::host
