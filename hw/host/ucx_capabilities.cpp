#include "hw/host/ucx_capabilities.h"

#include <ucp/api/ucp.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "hw/host/ucx_worker.h"

namespace memloom::host {

// What ucp_context_print_info writes for a context with the worker's features: the features
// decide which transports UCX keeps (RMA needs put/get, WAKEUP an event fd).
UcxResources ask_ucx_resources() {
  UcxResources answer;
  ucp_config_t* config = nullptr;
  ucs_status_t status = ucp_config_read(nullptr, nullptr, &config);
  if (status != UCS_OK) {
    answer.error = ucx_error("UCX configuration", status);
    return answer;
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  ucp_context_h context = nullptr;
  status = ucp_init(&params, config, &context);
  ucp_config_release(config);
  if (status != UCS_OK) {
    answer.error = ucx_error("UCX context", status);
    return answer;
  }
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

bool offers_peer_failure_detection(const std::vector<std::string>& resources) {
  for (const auto& resource : resources) {
    if (!is_host_local_resource(resource)) return true;
  }
  return resources.empty();
}

bool ucx_detects_dead_peers() {
  return offers_peer_failure_detection(ucx_resources().resources);
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
    while (!resource.empty() && (resource.back() == ' ' || resource.back() == '\r')) {
      resource.pop_back();
    }
    if (resource.find('/') != std::string::npos) resources.push_back(resource);
  }
  return resources;
}

bool is_rdma_resource(const std::string& resource) {
  const std::string transport = resource.substr(0, resource.find('/'));
  const std::string family = transport.substr(0, transport.find('_'));
  return family == "rc" || family == "dc" || family == "ud";
}

const UcxResources& ucx_resources() {
  static const UcxResources answer = ask_ucx_resources();
  return answer;
}

bool ucx_offers_rdma() {
  for (const auto& resource : ucx_resources().resources) {
    if (is_rdma_resource(resource)) return true;
  }
  return false;
}

std::string ucx_version() {
  return ucp_get_version_string();
}

}  // namespace memloom::host
