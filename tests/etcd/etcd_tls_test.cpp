// The etcd client over HTTPS with client certificates (etcd's --client-cert-auth), configured by
// the same TLS settings as the TCP store: keys, watches and rank-down work; a client that is
// plain, has no certificate or one of another CA, or trusts another CA, fails with an error
// naming the member and the reason, well within its deadline.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "memloom/error.h"
#include "src/store/etcd_client.h"
#include "src/store/etcd_http.h"
#include "tests/etcd/etcd_cluster.h"
#include "tests/etcd/etcd_test_pki.h"
#include "tests/store/store_test_support.h"

namespace memloom::store::testing {
namespace {

using Clock = std::chrono::steady_clock;

class EtcdTls : public ::testing::Test {
 protected:
  ClientOptions options(std::shared_ptr<const TlsConfig> tls, int rank = -1) {
    ClientOptions options = quick_client_options();
    options.connect_timeout = 3000ms;
    options.job_namespace = "tls-" + std::to_string(::getpid());
    options.rank = rank;
    options.group = "g";
    options.tls = TlsSetting::use(std::move(tls));
    return options;
  }
  ClientOptions good(int rank = -1) { return options(pki_.config(pki_.client()), rank); }

  // The error Client::connect fails with, checked to come within connect_timeout (3 s).
  Error refusal(const ClientOptions& client_options) {
    auto start = Clock::now();
    try {
      Client::connect(etcd_.url(), client_options);
    } catch (const Error& error) {
      EXPECT_LT(Clock::now() - start, client_options.connect_timeout + 1000ms) << error.what();
      EXPECT_EQ(error.status(), Status::kCommunication) << error.what();
      EXPECT_NE(std::string(error.what()).find(endpoint()), std::string::npos) << error.what();
      std::printf("refused: %s\n", error.what());
      return error;
    }
    ADD_FAILURE() << "the client connected";
    return Error(Status::kSuccess, "");
  }
  std::string endpoint() { return etcd_.url().substr(std::string(kEtcdScheme).size()); }

  tls_test::TestPki pki_;
  EtcdCluster etcd_{1, etcd_server_tls(pki_)};
};

TEST_F(EtcdTls, KeysWatchesAndRankDownWorkOverTls) {
  auto client = Client::connect(etcd_.url(), good());
  client->set("k", "v");
  EXPECT_EQ(client->get("k", 0ms), "v");
  EXPECT_EQ(client->add("n", 2), 2);
  EXPECT_TRUE(client->compare_and_swap("k", "v", "w", false, nullptr));

  EventLog changes, downs;
  client->watch_key("k", changes.callback());
  client->watch_rank_down("g", downs.callback());
  // A get that waits rides a watch stream of its own.
  std::thread writer([&] {
    std::this_thread::sleep_for(200ms);
    Client::connect(etcd_.url(), good())->set("later", "x");
  });
  EXPECT_EQ(client->get("later", 5000ms), "x");
  writer.join();

  client->set("k", "changed");
  auto seen = changes.wait_for(1, 5000ms);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].value, "changed");

  Client::connect(etcd_.url(), good(3)).reset();  // revokes its lease on close
  auto down = downs.wait_for(1, 5000ms);
  ASSERT_EQ(down.size(), 1u);
  EXPECT_EQ(down[0].kind, WatchEventKind::kRankDown);
  EXPECT_EQ(down[0].rank, 3);
}

TEST_F(EtcdTls, HostNamesAreCheckedAgainstTheCertificate) {
  // The server certificate names localhost as well as 127.0.0.1.
  std::string by_name = "etcd://localhost:" + etcd_.url().substr(etcd_.url().rfind(':') + 1);
  Client::connect(by_name, good())->set("k", "v");
  check_etcd_reachable(etcd_.url(), 2000ms, TlsSetting::use(pki_.config(pki_.client())));
}

TEST_F(EtcdTls, PlainClientIsRefused) {
  Error error = refusal(options(nullptr));
  EXPECT_NE(std::string(error.what()).find("HTTPS"), std::string::npos) << error.what();
}

// What etcd's TLS listener may do instead of staying silent: its handshake fails on the plain
// request's first bytes and it closes the connection. The hint names the likely cause all the same.
TEST(EtcdPlainClient, MemberThatClosesOnThePlainRequestGetsTheHttpsHint) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(listener, 8), 0);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const uint16_t port = ntohs(address.sin_port);
  std::atomic<bool> done{false};
  std::thread member([&] {
    // Reads what the client sends, then closes: every connection, until the test ends.
    while (!done.load()) {
      pollfd ready{listener, POLLIN, 0};
      if (::poll(&ready, 1, 50) <= 0) continue;
      const int connection = ::accept(listener, nullptr, nullptr);
      if (connection < 0) continue;
      char request[64];
      [[maybe_unused]] ssize_t got = ::read(connection, request, sizeof(request));
      ::close(connection);
    }
  });
  etcd::EtcdHttp http({EtcdEndpoint{"127.0.0.1", port}});
  const std::string expected_endpoint = "127.0.0.1:" + std::to_string(port);
  auto start = Clock::now();
  try {
    http.call("/v3/kv/put", "{\"key\":\"aw==\"}", Deadline::after(1000ms), "test put");
    ADD_FAILURE() << "a member that closes every connection answered";
  } catch (const Error& error) {
    EXPECT_LT(Clock::now() - start, 3000ms);
    EXPECT_EQ(error.status(), Status::kCommunication) << error.what();
    std::string message = error.what();
    EXPECT_NE(message.find(expected_endpoint), std::string::npos) << message;
    EXPECT_NE(message.find("if the member serves HTTPS"), std::string::npos) << message;
  }
  done = true;
  member.join();
  ::close(listener);
}

TEST_F(EtcdTls, ClientOfAnotherCaIsRefused) {
  // It trusts the server's CA, but the server does not trust its own.
  Error error = refusal(options(pki_.config(pki_.other_ca_client(), false, true)));
  EXPECT_NE(std::string(error.what()).find("refused this client's certificate"), std::string::npos)
      << error.what();
}

TEST_F(EtcdTls, ClientTrustingAnotherCaRefusesTheServer) {
  auto config = std::make_shared<TlsConfig>(*pki_.config(pki_.client()));
  config->files.ca_files = {pki_.other_ca_file()};
  Error error = refusal(options(config));
  EXPECT_NE(std::string(error.what()).find("refused the member's certificate"), std::string::npos)
      << error.what();
}

TEST_F(EtcdTls, ClientWithoutACertificateIsRefused) {
  // memloom's own settings always carry a certificate: a bare TLS context stands for a client
  // that has none.
  auto context = std::make_shared<boost::asio::ssl::context>(boost::asio::ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(context->native_handle(), TLS1_3_VERSION);
  context->load_verify_file(pki_.ca_file());
  context->set_verify_mode(boost::asio::ssl::verify_peer);
  etcd::EtcdHttp http(parse_etcd_url(etcd_.url()).endpoints, context);
  auto start = Clock::now();
  try {
    http.call("/v3/kv/put", "{\"key\":\"aw==\"}", Deadline::after(3000ms), "test put");
    ADD_FAILURE() << "etcd took a client without a certificate";
  } catch (const Error& error) {
    EXPECT_LT(Clock::now() - start, 4000ms);
    EXPECT_EQ(error.status(), Status::kCommunication);
    std::string message = error.what();
    EXPECT_NE(message.find(endpoint()), std::string::npos) << message;
    EXPECT_NE(message.find("refused this client's certificate"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace memloom::store::testing
