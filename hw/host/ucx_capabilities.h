// What the UCX found at run time offers: its version and the transports ("tl/device") a UCP context
// with memloom's features would use, as ucp_context_print_info lists them (so UCX_TLS,
// UCX_NET_DEVICES and the NICs present all count).
#pragma once

#include <ucp/api/ucp.h>

#include <string>
#include <vector>

namespace memloom::host {

struct UcxResources {
  std::vector<std::string> resources;  // "rc_mlx5/mlx5_0:1", "tcp/eth0", ...
  std::string error;                   // UCX could not be asked (resources is empty)
};

// Asked once per process (a UCP context is opened and closed; no worker).
const UcxResources& ucx_resources();
// Asked now, whatever was asked before (for a test that changes UCX_TLS after the first answer).
UcxResources ask_ucx_resources();
// Those of an open context.
std::vector<std::string> context_resources(ucp_context_h context);
// "tl/device" of every "resource" line in ucp_context_print_info's output.
std::vector<std::string> parse_ucx_resources(const std::string& print_info);

// Whether some resource can serve an endpoint with peer error handling (UCX_TLS left it a network
// transport, not only shared memory, cross-memory attach, self or GPU copies). True for an empty
// list: UCX found nothing at all, and that fails elsewhere.
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
