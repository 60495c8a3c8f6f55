// What a process outside the job reaches by speaking UCP to a UCX transport directly, skipping
// memloom's messages: a put of its own (ucp_put_nbx with a remote key it packed itself), which UCX
// emulates in software over a transport without RDMA, writing wherever the message says. Where
// UCX has no RDMA transport, memloom's context has no RMA, so UCX installs no handler for it and
// drops the message (with a warning). Under MEMLOOM_UCX_DATA_PATH=rma the transport serves RMA and
// this test fails: the put lands (README, "Security model").
#include <gtest/gtest.h>
#include <ucp/api/ucp.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "hw/hal/transport.h"
#include "hw/host/ucx_endpoints.h"
#include "hw/host/ucx_transport.h"
#include "hw/host/ucx_worker.h"
#include "memloom/deadline.h"
#include "tests/hal/ucx_outsider_endpoint.h"

namespace memloom {
namespace {

TEST(UcxOutsider, APutOfItsOwnDoesNotReachExposedMemory) {
  hal::TransportOptions options;
  options.job_secret.fill(9);
  std::vector<uint8_t> exposed(4096, 0x66);
  host::UcxTransport server(options);
  server.expose(exposed.data(), exposed.size());
  const std::string address = server.address();  // ucx://127.0.0.1:PORT

  host::UcxWorker worker;  // the outsider's
  std::vector<uint8_t> own(4096, 0x77);
  ucp_mem_map_params_t map{};
  map.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  map.address = own.data();
  map.length = own.size();
  ucp_mem_h memory = nullptr;
  ASSERT_EQ(ucp_mem_map(worker.context(), &map, &memory), UCS_OK);
  void* packed = nullptr;
  size_t packed_size = 0;
  ASSERT_EQ(ucp_rkey_pack(worker.context(), memory, &packed, &packed_size), UCS_OK);
  {
    host::UcxEndpoints endpoints(worker, [](ucp_ep_h) {});
    auto peer = hal_test::connect_as_outsider(endpoints, address);
    ucp_rkey_h key = nullptr;
    if (ucp_ep_rkey_unpack(peer->ep(), packed, &key) == UCS_OK) {
      ucp_request_param_t param{};
      ucs_status_ptr_t request = ucp_put_nbx(
          peer->ep(), own.data(), 64, reinterpret_cast<uint64_t>(exposed.data()), key, &param);
      const Deadline deadline = Deadline::after(std::chrono::seconds(1));
      if (UCS_PTR_IS_PTR(request)) {
        worker.progress_until([&] { return ucp_request_check_status(request) != UCS_INPROGRESS; },
                              deadline);
        ucp_request_free(request);
      }
      ucs_status_ptr_t flush = ucp_ep_flush_nbx(peer->ep(), &param);
      if (UCS_PTR_IS_PTR(flush)) {
        worker.progress_until([&] { return ucp_request_check_status(flush) != UCS_INPROGRESS; },
                              deadline);
        ucp_request_free(flush);
      }
      ucp_rkey_destroy(key);
    }
    peer.reset();
    endpoints.close_all();
  }
  ucp_rkey_buffer_release(packed);
  ucp_mem_unmap(worker.context(), memory);
  EXPECT_EQ(exposed, std::vector<uint8_t>(4096, 0x66)) << "an outsider's put reached the memory";
}

}  // namespace
}  // namespace memloom
