// A rank whose requests go by rma (its UCX has an RDMA transport, or MEMLOOM_UCX_DATA_PATH=rma)
// reaches a rank whose UCX has none: that rank serves no remote keys (its context has no RMA, see
// UcxWorker), so the first request for one is refused with kNotSupported before any byte moves,
// and the requester moves to am for that peer, for this call and the next ones.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hw/hal/transport.h"
#include "hw/host/ucx_capabilities.h"
#include "hw/host/ucx_transport.h"
#include "memloom/deadline.h"
#include "tests/support/scoped_env.h"

namespace memloom {
namespace {

using Op = hal::TransferOp;
using Direction = hal::TransferOp::Direction;

TEST(UcxMixedPaths, AnRmaRequesterReachesARankThatServesOnlyAm) {
  if (host::ucx_offers_rdma())
    GTEST_SKIP() << "UCX has an RDMA transport here: every rank serves rma";
  hal::TransportOptions options;
  options.job_secret.fill(3);
  std::vector<uint8_t> exposed(1 << 20, 0);
  std::optional<host::UcxTransport> server, requester;
  {
    test::ScopedEnv path("MEMLOOM_UCX_DATA_PATH", std::nullopt);  // auto: am, no RMA served
    server.emplace(options);
  }
  server->expose(exposed.data(), exposed.size());
  {
    test::ScopedEnv path("MEMLOOM_UCX_DATA_PATH", std::string("rma"));
    requester.emplace(options);
  }
  for (uint8_t round = 1; round <= 3; ++round) {
    std::vector<uint8_t> data(exposed.size(), round), back(exposed.size(), 0);
    const auto remote = reinterpret_cast<uint64_t>(exposed.data());
    requester->transfer(server->address(),
                        {Op{Direction::kWrite, remote, data.data(), data.size()},
                         Op{Direction::kRead, remote, back.data(), back.size()}},
                        Deadline::after(std::chrono::seconds(30)));
    EXPECT_EQ(back, data) << "round " << int{round};
    EXPECT_EQ(exposed, data) << "round " << int{round};
  }
  requester.reset();
  server.reset();
}

}  // namespace
}  // namespace memloom
