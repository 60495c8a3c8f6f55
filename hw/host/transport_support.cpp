#include "hw/host/transport_support.h"

#include <string>

#include "hw/host/ucx_capabilities.h"
#include "hw/host/ucx_transport.h"
#include "hw/host/ucx_worker.h"
#include "memloom/error.h"

namespace memloom::host {

hal::TransportSupport transport_support() {
  hal::TransportSupport support;
  support.ucx_version = ucx_version();
  const UcxResources& found = ucx_resources();
  support.ucx_error = found.error;
  support.ucx_resources = found.resources;
  support.ucx_rdma = ucx_offers_rdma();
  support.ucx_cuda_memory = ucx_supports_cuda_memory();
  try {
    // Where UCX_TLS leaves only host-local transports, endpoints go without peer error handling
    // and every request goes on am whatever MEMLOOM_UCX_DATA_PATH asks (UcxTransport::run): the
    // path shown is the one in effect, with the reason when it is not the one asked for.
    const UcxDataPath asked = chosen_ucx_data_path();
    support.ucx_data_path = ucx_data_path_name(asked);
    if (asked == UcxDataPath::kRma && !offers_peer_failure_detection(found.resources)) {
      support.ucx_data_path =
          "am (rma asked for, but UCX_TLS leaves only host-local transports: "
          "endpoints without peer error handling use am)";
    }
  } catch (const Error& error) {
    support.ucx_data_path = std::string("error: ") + error.what();
  }
  return support;
}

}  // namespace memloom::host
