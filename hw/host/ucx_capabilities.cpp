#include "hw/host/ucx_capabilities.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "hw/host/ucx_worker.h"

namespace memloom::host {
namespace {

// A transport that reaches only processes of this host: shared memory (posix, sysv, knem, xpmem),
// cross-memory attach (cma), loopback (self) and GPU copies (cuda_*, rocm_*, gdr_copy). UCX 1.13
// serves no endpoint with peer error handling over any of them.
bool is_host_local_resource(const std::string& resource) {
  const std::string transport = resource.substr(0, resource.find('/'));
  for (const char* local : {"self", "posix", "sysv", "cma", "knem", "xpmem", "gdr_copy"}) {
    if (transport == local) return true;
  }
  return transport.rfind("cuda_", 0) == 0 || transport.rfind("rocm_", 0) == 0;
}

}  // namespace

ucp_context_h open_ucx_context(uint64_t features, std::string* error,
                               const std::function<ucs_status_t(ucp_config_t*)>& configure) {
  ucp_config_t* config = nullptr;
  ucs_status_t status = ucp_config_read(nullptr, nullptr, &config);
  if (status != UCS_OK) {
    *error = ucx_error("UCX configuration", status);
    return nullptr;
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = features;
  ucp_context_h context = nullptr;
  if (configure) status = configure(config);
  if (status == UCS_OK) status = ucp_init(&params, config, &context);
  ucp_config_release(config);
  if (status == UCS_OK) return context;
  *error = ucx_error("UCX context", status);
  return nullptr;
}

// What ucp_context_print_info writes for a context with the worker's features: the features
// decide which transports UCX keeps (RMA needs put/get, WAKEUP an event fd).
UcxResources ask_ucx_resources() {
  UcxResources answer;
  ucp_context_h context =
      open_ucx_context(UCP_FEATURE_RMA | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP, &answer.error);
  if (context == nullptr) return answer;
  answer.resources = context_resources(context);
  ucp_cleanup(context);
  return answer;
}

std::vector<std::string> context_resources(ucp_context_h context) {
  char* text = nullptr;
  size_t length = 0;
  FILE* stream = open_memstream(&text, &length);
  if (stream == nullptr) return {};
  ucp_context_print_info(context, stream);
  std::fclose(stream);
  std::vector<std::string> resources = parse_ucx_resources(std::string(text, length));
  std::free(text);
  return resources;
}

bool offers_peer_failure_detection(const std::vector<std::string>& resources) {
  return resources.empty() ||
         !std::all_of(resources.begin(), resources.end(), is_host_local_resource);
}

std::vector<std::string> parse_ucx_resources(const std::string& print_info) {
  // "#      resource 1  :  md 1  dev 1  flags -- tcp/eth0"
  std::vector<std::string> resources;
  std::istringstream lines(print_info);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find(" resource ") == std::string::npos) continue;
    const size_t marker = line.rfind("-- ");
    if (marker == std::string::npos) continue;
    std::string resource = line.substr(marker + 3);
    resource.erase(resource.find_last_not_of(" \r") + 1);  // npos + 1: all blank, all erased
    if (resource.find('/') != std::string::npos) resources.push_back(resource);
  }
  return resources;
}

bool is_rdma_resource(const std::string& resource) {
  const std::string family = resource.substr(0, resource.find_first_of("_/"));
  return family == "rc" || family == "dc" || family == "ud";
}

const UcxResources& ucx_resources() {
  static const UcxResources answer = ask_ucx_resources();
  return answer;
}

bool ucx_offers_rdma() {
  const std::vector<std::string>& found = ucx_resources().resources;
  return std::any_of(found.begin(), found.end(), is_rdma_resource);
}

bool ucx_supports_cuda_memory() {
  static const bool supported = [] {
    std::string error;
    ucp_context_h context = open_ucx_context(UCP_FEATURE_RMA | UCP_FEATURE_AM, &error);
    if (context == nullptr) return false;
    ucp_context_attr_t attr{};
    attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
    const bool cuda = ucp_context_query(context, &attr) == UCS_OK &&
                      (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
    ucp_cleanup(context);
    return cuda;
  }();
  return supported;
}

}  // namespace memloom::host
