#include "hw/host/ucx_messages.h"

#include "hw/host/ucx_worker.h"
#include "src/base/log.h"

namespace memloom::host::ucx_messages {
namespace {

void sent(void* request, ucs_status_t status, void* user_data) {
  if (status != UCS_OK && status != UCS_ERR_CANCELED) {
    MEMLOOM_LOG(kDebug,
                "transport: a control message was not delivered: " << ucs_status_string(status));
  }
  delete static_cast<std::string*>(user_data);
  ucp_request_free(request);
}

ucs_status_t received(void* arg, const void* /*header*/, size_t /*header_length*/, void* data,
                      size_t length, const ucp_am_recv_param_t* param) {
  const auto* registration = static_cast<const Registration*>(arg);
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0) {
    // Sent eagerly by every memloom peer: a rendezvous message is not one of ours.
    MEMLOOM_LOG(kWarn, "transport: dropped a control message that did not come eagerly");
    return UCS_OK;
  }
  ucp_ep_h reply_ep =
      (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) != 0 ? param->reply_ep : nullptr;
  registration->handler(registration->arg, data, length, reply_ep);
  return UCS_OK;  // the data is not kept past the handler
}

}  // namespace

void send(ucp_ep_h ep, unsigned id, std::string bytes, bool reply) {
  if (ep == nullptr) return;  // none, or closed by force (the peer is marked failed)
  auto* owned = new std::string(std::move(bytes));
  ucp_request_param_t param{};
  param.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  param.cb.send = sent;
  param.user_data = owned;
  param.flags = UCP_AM_SEND_FLAG_EAGER | (reply ? UCP_AM_SEND_FLAG_REPLY : 0);
  ucs_status_ptr_t request =
      ucp_am_send_nbx(ep, id, nullptr, 0, owned->data(), owned->size(), &param);
  if (!UCS_PTR_IS_PTR(request)) delete owned;  // done at once, or failed at once
}

void set_handler(ucp_worker_h worker, unsigned id, const Registration* registration) {
  set_data_handler(worker, id, received, const_cast<Registration*>(registration));
}

void set_data_handler(ucp_worker_h worker, unsigned id, ucp_am_recv_callback_t handler, void* arg) {
  ucp_am_handler_param_t param{};
  param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                     UCP_AM_HANDLER_PARAM_FIELD_ARG;
  param.id = id;
  param.cb = handler;
  param.arg = arg;
  ucs_status_t status = ucp_worker_set_am_recv_handler(worker, &param);
  if (status != UCS_OK) raise(Status::kCommunication, ucx_error("UCX message handler", status));
}

}  // namespace memloom::host::ucx_messages
