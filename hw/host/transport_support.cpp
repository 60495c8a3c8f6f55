#include "hw/host/transport_support.h"

#include <string>

#include "hw/host/ucx_capabilities.h"
#include "hw/host/ucx_data_path.h"
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
    support.ucx_data_path = ucx_data_path_name(chosen_ucx_data_path());
  } catch (const Error& error) {
    support.ucx_data_path = std::string("error: ") + error.what();
  }
  return support;
}

}  // namespace memloom::host
