// What UCX offers here, as memloom reads it (hw/host/ucx_capabilities.h): the parser of
// ucp_context_print_info's resource lines, which family counts as RDMA, and the live answer under
// a UCX_TLS that leaves only TCP (RDMA must then be "no" on any machine, NIC or not).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "hw/host/ucx_capabilities.h"

namespace memloom::host {
namespace {

// The layout UCX 1.13 prints, with the resources of a host with a ConnectX NIC.
constexpr const char* kPrintInfoWithNic = R"(#
# UCP context
#
#     component 0  :  self
#     component 1  :  tcp
#     component 4  :  ib
#
#            md 0  :  component 0  self
#            md 1  :  component 1  tcp
#            md 2  :  component 4  mlx5_0
#
#      resource 0  :  md 0  dev 0  flags -- self/memory0
#      resource 1  :  md 1  dev 1  flags -- tcp/eth0
#      resource 2  :  md 2  dev 2  flags -- rc_mlx5/mlx5_0:1
#      resource 3  :  md 2  dev 2  flags -- dc_mlx5/mlx5_0:1
#      resource 4  :  md 2  dev 2  flags -- ud_verbs/mlx5_0:1
#
)";

TEST(UcxResources, ParsesEveryResourceLine) {
  const auto resources = parse_ucx_resources(kPrintInfoWithNic);
  const std::vector<std::string> expected = {"self/memory0", "tcp/eth0", "rc_mlx5/mlx5_0:1",
                                             "dc_mlx5/mlx5_0:1", "ud_verbs/mlx5_0:1"};
  EXPECT_EQ(resources, expected);
  EXPECT_TRUE(parse_ucx_resources("# UCP context\n#     component 4  :  ib\n").empty());
}

TEST(UcxResources, RcDcAndUdAreRdmaOthersAreNot) {
  for (const char* rdma : {"rc_mlx5/mlx5_0:1", "rc_verbs/mlx5_1:1", "dc_mlx5/mlx5_0:1",
                           "ud_verbs/mlx5_0:1", "ud_mlx5/mlx5_0:1"}) {
    EXPECT_TRUE(is_rdma_resource(rdma)) << rdma;
  }
  for (const char* other : {"tcp/eth0", "self/memory0", "sysv/memory", "posix/memory", "cma/memory",
                            "cuda_copy/cuda", "cuda_ipc/cuda", "rdmacm/mlx5_0"}) {
    EXPECT_FALSE(is_rdma_resource(other)) << other;
  }
}

// UCX_TLS=tcp: UCX lists TCP resources only, so memloom must say it has no RDMA transport.
TEST(UcxResources, OnlyTcpUnderUcxTlsTcp) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    setenv("UCX_TLS", "tcp", 1);
    // Asked afresh: the parent may have asked (and cached) under its own UCX_TLS already, as a
    // UCX transport does to choose its data path.
    const UcxResources found = ask_ucx_resources();
    bool only_tcp = found.error.empty() && !found.resources.empty();
    for (const auto& resource : found.resources)
      only_tcp = only_tcp && resource.rfind("tcp/", 0) == 0 && !is_rdma_resource(resource);
    _exit(only_tcp && !ucx_version().empty() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "under UCX_TLS=tcp the resources were not TCP only, or RDMA was claimed";
}

// Whatever this machine has: RDMA is claimed exactly when an rc/dc/ud resource is listed.
TEST(UcxResources, RdmaFollowsTheResourceList) {
  const UcxResources& found = ucx_resources();
  ASSERT_TRUE(found.error.empty()) << found.error;
  bool any = false;
  for (const auto& resource : found.resources) any = any || is_rdma_resource(resource);
  EXPECT_EQ(ucx_offers_rdma(), any);
}

}  // namespace
}  // namespace memloom::host
