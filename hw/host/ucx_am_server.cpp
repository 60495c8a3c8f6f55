#include "hw/host/ucx_am_server.h"

#include <chrono>
#include <cstring>
#include <exception>
#include <iterator>
#include <mutex>
#include <vector>

#include "hw/host/ucx_messages.h"
#include "memloom/error.h"
#include "src/base/hex.h"
#include "src/base/log.h"

namespace memloom::host {
namespace {

namespace msg = ucx_messages;

// How long one staging copy (at most a message's payload) may take in a handler.
constexpr auto kStagingTimeout = std::chrono::seconds(10);

}  // namespace

// A request being served; its static functions are the handlers and callbacks that serve it.
struct UcxAmServer::Request {
  explicit Request(UcxAmServer& server) : server(server) { server.requests_held_.fetch_add(1); }
  ~Request() { server.requests_held_.fetch_sub(1); }
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  // Sends the reply (its message or, for a read, its ranges' bytes); reply_sent frees it.
  static void send_reply(std::unique_ptr<Request> request, bool with_data) {
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send = reply_sent;
    param.user_data = request.get();
    void* buffer = request->message.data();
    size_t count = request->message.size();
    if (with_data) {
      msg::describe_payload(request->iov, param, &buffer, &count);
    } else {  // a refusal or an acknowledgement: small, eager as every control message
      param.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
      param.flags = UCP_AM_SEND_FLAG_EAGER;
    }
    ucs_status_ptr_t sent = ucp_am_send_nbx(request->reply_ep, msg::kAmReply, &request->reply,
                                            sizeof(request->reply), buffer, count, &param);
    if (UCS_PTR_IS_PTR(sent)) {
      request.release();  // reply_sent deletes it
    } else if (UCS_PTR_IS_ERR(sent)) {
      MEMLOOM_LOG(kDebug,
                  ucx_error("transport: a data reply could not be sent", UCS_PTR_STATUS(sent)));
    }
  }

  static void reply_sent(void* ucx_request, ucs_status_t status, void* user_data) {
    if (status != UCS_OK && status != UCS_ERR_CANCELED) {
      MEMLOOM_LOG(kDebug, ucx_error("transport: a data reply was not delivered", status));
    }
    ucp_request_free(ucx_request);
    delete static_cast<Request*>(user_data);
  }

  // Answers without data, its holds and host buffer ended first: a write's acknowledgement
  // (kSuccess, once its bytes are in place) or a refusal.
  static void answer(std::unique_ptr<Request> request, Status status, std::string why = {}) {
    request->holds.clear();
    request->staged.release();
    request->reply = {request->request_id, static_cast<uint32_t>(status), 0};
    request->message = std::move(why);
    send_reply(std::move(request), /*with_data=*/false);
  }

  void copy(const std::vector<StagingCopy>& copies) {
    if (copies.empty()) return;
    server.staging_->staging().copy_all(copies, Deadline::after(kStagingTimeout));
  }

  // Runs `step` (staging copies, or leasing their buffer); false when it threw, after refusing
  // `request` as kCommunication: a failure of the link, not of the requester's ranges.
  template <typename Step>
  static bool try_staging(std::unique_ptr<Request>& request, const char* what, Step step) {
    try {
      step();
      return true;
    } catch (const std::exception& error) {
      std::string why = what + (" at " + request->server.own_address_) + " failed: " + error.what();
      answer(std::move(request), Status::kCommunication, std::move(why));
      return false;
    }
  }

  // The data of a rendezvous write is in (or failed to come): staged parts on, then the answer.
  static void write_received(void* ucx_request, ucs_status_t status, size_t, void* user_data) {
    std::unique_ptr<Request> request(static_cast<Request*>(user_data));
    if (ucx_request != nullptr) ucp_request_free(ucx_request);
    if (request->server.end_receiving(request.get())) return;  // abandoned: nobody waits
    if (status != UCS_OK) {
      // The requester's endpoint failed or closed: nobody waits for an answer.
      MEMLOOM_LOG(kDebug, ucx_error("transport: receiving a write's data", status));
      return;
    }
    if (request->staged.empty() || try_staging(request, "staging a write into device memory", [&] {
          request->copy(request->staged.copy_host_parts(/*into_buffer=*/false));
        })) {
      answer(std::move(request), Status::kSuccess);
    }
  }

  // Parses and checks a request of `payload_bytes` (SIZE_MAX: a read); false when it was refused
  // (the refusal is sent, `request` is gone) or dropped.
  static bool accept(std::unique_ptr<Request>& request, const void* header, size_t header_length,
                     size_t payload_bytes, const ucp_am_recv_param_t* param) {
    UcxAmServer& server = request->server;
    auto head = msg::decode<msg::AmRequestHeader>(header, header_length);
    if (!head) {
      MEMLOOM_LOG(kWarn, "transport: dropped a data request without its header");
      return false;
    }
    request->request_id = head->request_id;
    request->reply_ep =
        (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) != 0 ? param->reply_ep : nullptr;
    if (request->reply_ep == nullptr) {
      MEMLOOM_LOG(kWarn, "transport: dropped a data request that asked for no reply");
      return false;
    }
    if (!server.gate_.admitted(request->reply_ep)) {
      answer(std::move(request), Status::kCommunication,
             "refused by " + server.own_address_ + ": the endpoint has not proven the job secret");
      return false;
    }
    const size_t count = head->op_count;
    if (count == 0 || header_length != sizeof(*head) + count * sizeof(msg::AmRange)) {
      answer(std::move(request), Status::kInvalidInput,
             "a data request to " + server.own_address_ + " is malformed");
      return false;
    }
    request->ranges.resize(count);
    std::memcpy(request->ranges.data(), static_cast<const char*>(header) + sizeof(*head),
                count * sizeof(msg::AmRange));
    uint64_t total = 0;
    UcxRegionRegistry::Hold held;  // the region of the range before
    for (const msg::AmRange& range : request->ranges) {
      if (!held.covers(range.address, range.bytes)) {
        held = server.regions_.hold(range.address, range.bytes);
        if (held.token == nullptr) {
          answer(std::move(request), Status::kInvalidInput,
                 "[" + base::hex(range.address) + ", +" + std::to_string(range.bytes) +
                     ") refused: the range is not inside memory exposed by " + server.own_address_);
          return false;
        }
        request->holds.push_back(held.token);
      }
      auto* memory = reinterpret_cast<std::byte*>(range.address);
      if (held.staged) {
        request->staged.add(request->iov.size(), memory, range.bytes);
        memory = nullptr;  // filled in by stage(): never the device address itself
      }
      request->iov.push_back({memory, range.bytes});
      total += range.bytes;
    }
    if (payload_bytes != SIZE_MAX && total != payload_bytes) {
      answer(std::move(request), Status::kInvalidInput,
             "a write to " + server.own_address_ + " carries " + std::to_string(payload_bytes) +
                 " bytes for ranges of " + std::to_string(total));
      return false;
    }
    return true;
  }

  // Packs a request of several ranges and, with staged parts, leases its pooled buffer and copies a
  // read's staged bytes there; false when that failed (the failure is sent, `request` is gone).
  static bool stage(std::unique_ptr<Request>& request, bool read) {
    // Ranges that continue one another (a batch in the owner's order) go to UCX as one: received
    // into or sent from the region straight. Never with staged parts, which count by index.
    if (request->staged.empty()) msg::merge_adjacent(request->iov);
    if (request->iov.size() > 1) request->staged.pack_host(request->iov);
    return request->staged.empty() || try_staging(request, "staging device memory", [&] {
             request->staged.lease(*request->server.staging_, request->iov);
             if (read) request->copy(request->staged.copy_host_parts(/*into_buffer=*/true));
           });
  }

  static ucs_status_t on_write(void* arg, const void* header, size_t header_length, void* data,
                               size_t length, const ucp_am_recv_param_t* param) {
    auto* self = static_cast<UcxAmServer*>(arg);
    auto request = std::make_unique<Request>(*self);
    // A refused rendezvous is dropped without receiving: the sender's send completes, and it
    // learns of the refusal from the reply.
    if (!accept(request, header, header_length, length, param)) return UCS_OK;
    if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) == 0) {
      // Device ranges (no buffer) by the staging straight from UCX's buffer.
      const char* from = static_cast<const char*>(data);
      std::vector<StagingCopy> staged;
      for (size_t i = 0; i < request->iov.size(); ++i) {
        const ucp_dt_iov_t& part = request->iov[i];
        if (part.buffer == nullptr) {
          staged.push_back(
              {reinterpret_cast<void*>(request->ranges[i].address), from, part.length});
        } else {
          std::memcpy(part.buffer, from, part.length);
        }
        from += part.length;
      }
      if (staged.empty() || try_staging(request, "staging a write into device memory",
                                        [&] { request->copy(staged); })) {
        answer(std::move(request), Status::kSuccess);
      }
      return UCS_OK;
    }
    if (!stage(request, /*read=*/false)) return UCS_OK;
    Request* receiving = request.release();  // write_received answers and deletes it
    {
      std::lock_guard<std::mutex> lock(self->receiving_mutex_);
      self->receiving_.emplace(receiving->reply_ep, receiving);
    }
    msg::receive_data(self->worker_.worker(), data, receiving->iov, write_received, receiving);
    return UCS_OK;
  }

  static ucs_status_t on_read(void* arg, const void* header, size_t header_length, void* /*data*/,
                              size_t length, const ucp_am_recv_param_t* param) {
    auto* self = static_cast<UcxAmServer*>(arg);
    // A read carries its descriptors in the header only. UCX may still send one by rendezvous (a
    // header of many descriptors beyond the eager size: UCX 1.16 over shared memory, or
    // UCX_RNDV_THRESH=0), with nothing to receive: returning UCS_OK drops that empty descriptor.
    if (length != 0) {
      MEMLOOM_LOG(kWarn, "transport: dropped a read request that carried data");
      return UCS_OK;
    }
    auto request = std::make_unique<Request>(*self);
    if (!accept(request, header, header_length, SIZE_MAX, param)) return UCS_OK;
    if (!stage(request, /*read=*/true)) return UCS_OK;
    request->reply = {request->request_id, 0, 0};
    // The holds end when the send completes: the bytes have left the region.
    send_reply(std::move(request), /*with_data=*/true);
    return UCS_OK;
  }

  UcxAmServer& server;
  ucp_ep_h reply_ep = nullptr;
  uint64_t request_id = 0;
  std::vector<msg::AmRange> ranges;
  std::vector<std::shared_ptr<void>> holds;
  std::vector<ucp_dt_iov_t> iov;  // the ranges' memory, in order
  StagedParts staged;             // leased until the reply's send or the write's copy completed
  msg::AmReplyHeader reply{};     // must live until the reply's send completes
  std::string message;
};

UcxAmServer::UcxAmServer(UcxWorker& worker, UcxRegionRegistry& regions, UcxJobGate& gate,
                         std::shared_ptr<StagingBufferPool> staging)
    : worker_(worker), regions_(regions), gate_(gate), staging_(std::move(staging)) {
  msg::set_data_handler(worker_.worker(), msg::kAmWrite, Request::on_write, this);
  msg::set_data_handler(worker_.worker(), msg::kAmRead, Request::on_read, this);
}

UcxAmServer::~UcxAmServer() {
  if (worker_.worker() != nullptr) return;  // kept open: UCX may still own them, leaked
  for (Request* request : abandoned_) delete request;
}

size_t UcxAmServer::requests_abandoned() const {
  std::lock_guard<std::mutex> lock(receiving_mutex_);
  return abandoned_.size();
}

void UcxAmServer::endpoint_failed(ucp_ep_h ep) {
  std::vector<std::shared_ptr<void>> holds;  // ended outside the lock: an end may wake withdraw()
  std::lock_guard<std::mutex> lock(receiving_mutex_);
  auto [first, last] = receiving_.equal_range(ep);
  for (auto it = first; it != last; ++it) {
    Request* request = it->second;
    for (auto& hold : request->holds) holds.push_back(std::move(hold));
    request->holds.clear();
    abandoned_.insert(request);
  }
  if (first != last) {
    MEMLOOM_LOG(kDebug, "transport " << own_address_ << ": " << std::distance(first, last)
                                     << " write(s) abandoned with their failed endpoint");
  }
  receiving_.erase(first, last);
}

bool UcxAmServer::end_receiving(Request* request) {
  std::lock_guard<std::mutex> lock(receiving_mutex_);
  if (abandoned_.erase(request) != 0) return true;
  auto [first, last] = receiving_.equal_range(request->reply_ep);
  for (auto it = first; it != last; ++it) {
    if (it->second == request) {
      receiving_.erase(it);
      break;
    }
  }
  return false;
}

}  // namespace memloom::host
