// What the UCX found at run time offers: its version and the transports ("tl/device") a UCP context
// with memloom's features would use, as ucp_context_print_info lists them (so UCX_TLS,
// UCX_NET_DEVICES and the NICs present all count).
#pragma once

#include <ucp/api/ucp.h>

#include <functional>
#include <string>
#include <vector>

namespace memloom::host {

struct UcxResources {
  std::vector<std::string> resources;  // "rc_mlx5/mlx5_0:1", "tcp/eth0", ...
  std::string error;                   // UCX could not be asked (resources is empty)
};

// A UCP context with `features` (no worker), UCX's configuration changed by `configure` if given;
// null, `error` set, when UCX (or `configure`) fails.
ucp_context_h open_ucx_context(
    uint64_t features, std::string* error,
    const std::function<ucs_status_t(ucp_config_t*)>& configure = nullptr);

// Asked once per process (a UCP context is opened and closed; no worker), or now, whatever was
// asked before (for a test that changes UCX_TLS after the first answer).
const UcxResources& ucx_resources();
UcxResources ask_ucx_resources();
// An open context's; "tl/device" of every "resource" line in ucp_context_print_info's output.
std::vector<std::string> context_resources(ucp_context_h context);
std::vector<std::string> parse_ucx_resources(const std::string& print_info);

// Whether some resource can serve an endpoint with peer error handling (a network transport, not
// only transports within this host). True for an empty list: UCX found nothing, failing elsewhere.
bool offers_peer_failure_detection(const std::vector<std::string>& resources);

// An RDMA transport: UCX's rc, dc and ud families (rc_verbs, rc_mlx5, dc_mlx5, ud_verbs, ...).
bool is_rdma_resource(const std::string& resource);
bool ucx_offers_rdma();

// Whether a UCX context here reports CUDA memory support (asked once per process).
bool ucx_supports_cuda_memory();

// The UCX library's version ("1.13.1").
inline std::string ucx_version() {
  return ucp_get_version_string();
}

}  // namespace memloom::host
