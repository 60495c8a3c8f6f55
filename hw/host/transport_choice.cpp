#include "hw/host/transport_choice.h"

#include <cstdlib>
#include <string>

#include "hw/host/ucx_capabilities.h"
#include "hw/host/ucx_data_path.h"
#include "hw/host/ucx_worker.h"
#include "memloom/error.h"

namespace memloom::host {

TransportKind chosen_transport() {
  const char* value = std::getenv("MEMLOOM_TRANSPORT");
  if (value == nullptr || *value == '\0' || std::string(value) == "tcp") return TransportKind::kTcp;
  if (std::string(value) == "ucx") return TransportKind::kUcx;
  raise(Status::kInvalidInput,
        std::string("MEMLOOM_TRANSPORT=") + value + " is not a transport (tcp or ucx)");
}

TransportKind transport_for(hal::TransportRequest request) {
  return request == hal::TransportRequest::kRdma ? TransportKind::kUcx : chosen_transport();
}

const char* transport_name(TransportKind kind) {
  return kind == TransportKind::kUcx ? "ucx" : "tcp";
}

hal::TransportSupport transport_support() {
  hal::TransportSupport support;
  const char* value = std::getenv("MEMLOOM_TRANSPORT");
  support.configured_source = value == nullptr || *value == '\0' ? "default" : "MEMLOOM_TRANSPORT";
  try {
    support.configured = transport_name(chosen_transport());
  } catch (const Error& error) {
    support.configured_error = error.what();
  }
  support.ucx = true;  // both backends link the UCX transport (UCX is required to build)
  support.ucx_version = ucx_version();
  const UcxResources& found = ucx_resources();
  support.ucx_error = found.error;
  support.ucx_resources = found.resources;
  support.ucx_rdma = ucx_offers_rdma();
  support.ucx_cuda_memory = ucx_supports_cuda_memory();
  try {
    support.ucx_data_path = ucx_data_path_name(chosen_ucx_data_path());
  } catch (const Error& error) {
    support.ucx_data_path = std::string("error: ") + error.what();
  }
  return support;
}

}  // namespace memloom::host
