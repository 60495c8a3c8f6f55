// The config store over mutual TLS 1.3: TLS clients work as over TCP; a plain client, a client
// with a certificate from another CA, a revoked certificate, an old TLS version and a peer that
// never handshakes are all refused, and none of them disturbs the clients already connected.
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <thread>

#include "memloom/deadline.h"
#include "memloom/error.h"
#include "tests/store/store_test_support.h"
#include "tests/tls/test_pki.h"

namespace memloom::store::testing {
namespace {

using tls_test::Identity;
using tls_test::TestPki;

class TlsStore : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pki_ = new TestPki(); }
  static void TearDownTestSuite() {
    delete pki_;
    pki_ = nullptr;
  }
  void TearDown() override {
    clients_.clear();
    server_.reset();
  }

  void start_server(std::shared_ptr<const TlsConfig> tls, ServerOptions options = {}) {
    options.tls = TlsSetting::use(std::move(tls));
    server_ = Server::start(options);
  }
  // Connects (or throws); the client lives until the end of the test.
  Client& connect(std::shared_ptr<const TlsConfig> tls) {
    ClientOptions options = quick_client_options();
    options.connect_timeout = 3000ms;
    options.tls = TlsSetting::use(std::move(tls));
    clients_.push_back(Client::connect(server_->url(), options));
    return *clients_.back();
  }
  // Expects the connection to be refused; returns the reason.
  std::string expect_refused(std::shared_ptr<const TlsConfig> tls) {
    try {
      connect(std::move(tls));
    } catch (const Error& error) {
      EXPECT_EQ(error.status(), Status::kCommunication) << error.what();
      return error.what();
    }
    ADD_FAILURE() << "the connection was accepted";
    return "";
  }
  // A connected TLS client with a watch, to prove refusals do not disturb it.
  Client& connect_bystander(EventLog& events) {
    Client& client = connect(pki_->config(pki_->client(), true));
    client.set("bystander/key", "before");
    client.watch_key("bystander/watched", events.callback());
    return client;
  }
  void expect_bystander_unaffected(Client& client, EventLog& events) {
    EXPECT_TRUE(client.connected());
    EXPECT_EQ(client.get("bystander/key", 0ms), "before");
    client.set("bystander/watched", "after");
    auto seen = events.wait_for(1, 3000ms);
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].value, "after");
    EXPECT_TRUE(eventually([&] { return server_->connection_count() == 1; }, 3000ms))
        << server_->connection_count() << " connections";
  }

  static TestPki* pki_;
  std::unique_ptr<Server> server_;
  std::vector<std::unique_ptr<Client>> clients_;
};
TestPki* TlsStore::pki_ = nullptr;

TEST_F(TlsStore, ClientsSetGetAndWatchOverTls) {
  start_server(pki_->config(pki_->server()));
  Client& first = connect(pki_->config(pki_->client()));
  Client& second = connect(pki_->config(pki_->client()));
  EventLog events;
  second.watch_key("shared/key", events.callback());
  first.set("shared/key", "over TLS");
  EXPECT_EQ(second.get("shared/key", 1000ms), "over TLS");
  EXPECT_EQ(first.add("shared/counter", 5), 5);
  EXPECT_EQ(second.add("shared/counter", 2), 7);
  auto seen = events.wait_for(1, 3000ms);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].kind, WatchEventKind::kChanged);
  EXPECT_EQ(seen[0].value, "over TLS");
  // Large values cross many TLS records.
  std::string big(3 << 20, 'x');
  first.set("shared/big", big);
  EXPECT_EQ(second.get("shared/big", 0ms), big);
  EXPECT_EQ(server_->connection_count(), 2u);
}

TEST_F(TlsStore, RankDownIsReportedWhenATlsClientGoesAway) {
  start_server(pki_->config(pki_->server()));
  Client& watcher = connect(pki_->config(pki_->client()));
  EventLog events;
  watcher.watch_rank_down("workers", events.callback());
  ClientOptions options = quick_client_options();
  options.rank = 3;
  options.group = "workers";
  options.tls = TlsSetting::use(pki_->config(pki_->client()));
  auto worker = Client::connect(server_->url(), options);
  worker->set("worker/alive", "1");
  worker.reset();
  auto seen = events.wait_for(1, 5000ms);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].kind, WatchEventKind::kRankDown);
  EXPECT_EQ(seen[0].rank, 3);
  EXPECT_EQ(seen[0].group, "workers");
}

TEST_F(TlsStore, ClientsLearnWhenTheTlsServerStops) {
  start_server(pki_->config(pki_->server()));
  Client& client = connect(pki_->config(pki_->client()));
  server_.reset();
  EXPECT_TRUE(eventually([&] { return !client.connected(); }, 5000ms));
  try {
    client.set("k", "v");
    ADD_FAILURE() << "a set succeeded without a server";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::kCommunication) << error.what();
    EXPECT_NE(std::string(error.what()).find("the peer closed the connection"), std::string::npos)
        << error.what();
  }
}

TEST_F(TlsStore, PlainClientIsRefusedAndTlsClientsKeepWorking) {
  start_server(pki_->config(pki_->server(), true));
  EventLog events;
  Client& bystander = connect_bystander(events);
  std::string reason = expect_refused(nullptr);
  EXPECT_NE(reason.find("config store"), std::string::npos) << reason;
  // Raw protocol bytes (a valid hello) are not a TLS handshake either.
  RawConnection raw("127.0.0.1", server_->port());
  raw.send_bytes(hello_frame(1));
  EXPECT_TRUE(raw.closed_by_peer_within(3000ms));
  expect_bystander_unaffected(bystander, events);
}

TEST_F(TlsStore, ClientWithCertificateFromAnotherCaIsRefused) {
  start_server(pki_->config(pki_->server()));
  EventLog events;
  Client& bystander = connect_bystander(events);
  // The client trusts both CAs, so only the server's check can refuse it.
  std::string reason = expect_refused(pki_->config(pki_->other_ca_client(), false, true));
  EXPECT_NE(reason.find("alert"), std::string::npos) << reason;
  expect_bystander_unaffected(bystander, events);
}

TEST_F(TlsStore, ServerWithCertificateFromAnotherCaIsRefusedByTheClient) {
  start_server(pki_->config(pki_->other_ca_client(), false, true));
  std::string reason = expect_refused(pki_->config(pki_->client()));
  EXPECT_NE(reason.find("certificate verify failed"), std::string::npos) << reason;
}

TEST_F(TlsStore, RevokedClientCertificateIsRefused) {
  start_server(pki_->config(pki_->server(), true));
  EventLog events;
  Client& bystander = connect_bystander(events);
  std::string reason = expect_refused(pki_->config(pki_->revoked(), true));
  EXPECT_NE(reason.find("revoked"), std::string::npos) << reason;
  expect_bystander_unaffected(bystander, events);
}

TEST_F(TlsStore, RevokedServerCertificateIsRefusedByTheClient) {
  start_server(pki_->config(pki_->revoked(), true));
  std::string reason = expect_refused(pki_->config(pki_->client(), true));
  EXPECT_NE(reason.find("certificate revoked"), std::string::npos) << reason;
}

TEST_F(TlsStore, PeerThatNeverHandshakesIsDroppedAtTheDeadline) {
  ServerOptions options;
  options.tls_handshake_timeout = 300ms;
  start_server(pki_->config(pki_->server(), true), options);
  EventLog events;
  Client& bystander = connect_bystander(events);
  auto started = std::chrono::steady_clock::now();
  RawConnection silent("127.0.0.1", server_->port());
  // While the silent peer waits, the server serves everyone else.
  bystander.set("bystander/during", "yes");
  EXPECT_EQ(bystander.get("bystander/during", 0ms), "yes");
  EXPECT_TRUE(silent.closed_by_peer_within(5000ms));
  EXPECT_GE(std::chrono::steady_clock::now() - started, 250ms);
  expect_bystander_unaffected(bystander, events);
}

// Connections still in the handshake count as unauthenticated: filling the whole cap with them
// must not lock out a client with a good certificate (the oldest of them is evicted for it).
TEST_F(TlsStore, PeersStuckInTheHandshakeDoNotLockOutClients) {
  ServerOptions options;
  options.max_connections = 64;
  start_server(pki_->config(pki_->server(), true), options);
  std::vector<std::unique_ptr<RawConnection>> stuck;
  for (int i = 0; i < 64; ++i) {
    stuck.push_back(std::make_unique<RawConnection>("127.0.0.1", server_->port()));
  }
  Client& client = connect(pki_->config(pki_->client(), true));
  client.set("k", "v");
  EXPECT_EQ(client.get("k", 0ms), "v");
  // Everyone the budget (a quarter of the cap) could not hold was evicted at once.
  EXPECT_TRUE(stuck.front()->closed_by_peer_within(1000ms));
}

TEST_F(TlsStore, TlsClientCannotTalkToAPlainServer) {
  start_server(nullptr);
  Deadline quick = Deadline::after(3000ms);
  expect_refused(pki_->config(pki_->client()));
  EXPECT_FALSE(quick.expired()) << "the refusal should not wait for the connect timeout";
}

// An OpenSSL client limited to TLS 1.2 with a valid certificate: the server insists on 1.3.
TEST_F(TlsStore, OlderTlsVersionsAreRefused) {
  start_server(pki_->config(pki_->server()));
  namespace asio = boost::asio;
  asio::io_context io;
  asio::ssl::context context(asio::ssl::context::tls_client);
  SSL_CTX_set_max_proto_version(context.native_handle(), TLS1_2_VERSION);
  context.load_verify_file(pki_->ca_file());
  context.use_certificate_chain_file(pki_->client().cert_file);
  context.use_private_key_file(pki_->client().key_file, asio::ssl::context::pem);
  asio::ssl::stream<asio::ip::tcp::socket> stream(io, context);
  stream.lowest_layer().connect(
      asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), server_->port()));
  boost::system::error_code result = asio::error::would_block;
  stream.async_handshake(asio::ssl::stream_base::client,
                         [&](const boost::system::error_code& error) { result = error; });
  io.run_for(std::chrono::seconds(5));
  ASSERT_NE(result, asio::error::would_block) << "the handshake neither failed nor finished";
  EXPECT_TRUE(result) << "a TLS 1.2 handshake succeeded";
  EXPECT_NE(result.message().find("protocol version"), std::string::npos) << result.message();
  EXPECT_EQ(server_->connection_count(), 0u);
}

TEST_F(TlsStore, BrokenConfigurationsFailAtStartNamingTheFile) {
  auto config = std::make_shared<TlsConfig>(*pki_->config(pki_->server()));
  config->files.ca_files = {pki_->dir() + "/missing-ca.pem"};
  try {
    start_server(config);
    ADD_FAILURE() << "started without its CA file";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::kInvalidInput);
    EXPECT_NE(std::string(error.what()).find("missing-ca.pem"), std::string::npos) << error.what();
  }
  // The client's certificate with the server's key.
  config = std::make_shared<TlsConfig>(*pki_->config(pki_->server()));
  config->files.cert_file = pki_->client().cert_file;
  try {
    start_server(config);
    ADD_FAILURE() << "started with a key that does not match its certificate";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("does not match"), std::string::npos) << error.what();
  }
  // A file that is not a CRL.
  config = std::make_shared<TlsConfig>(*pki_->config(pki_->server()));
  config->files.crl_files = {pki_->ca_file()};
  EXPECT_THROW(start_server(config), Error);
  // TLS without a key.
  config = std::make_shared<TlsConfig>(*pki_->config(pki_->server()));
  config->key = nullptr;
  EXPECT_THROW(start_server(config), Error);
}

}  // namespace
}  // namespace memloom::store::testing
