#include "tests/store/store_test_support.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>
#include <thread>

#include "memloom/deadline.h"
#include "src/store/protocol.h"

namespace memloom::store::testing {

RawConnection::RawConnection(const std::string& host, uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  if (::inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1) {
    throw std::runtime_error("RawConnection: not an IPv4 address: " + host);
  }
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error("socket failed");
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd_);
    throw std::runtime_error(std::string("connect failed: ") + std::strerror(errno));
  }
}

RawConnection::~RawConnection() {
  if (fd_ >= 0) ::close(fd_);
}

void RawConnection::send_bytes(const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) throw std::runtime_error(std::string("send failed: ") + std::strerror(errno));
    sent += static_cast<size_t>(n);
  }
}

void RawConnection::shutdown_write() {
  ::shutdown(fd_, SHUT_WR);
}

bool RawConnection::closed_by_peer_within(std::chrono::milliseconds timeout) {
  Deadline deadline = Deadline::after(timeout);
  char buffer[4096];
  while (!deadline.expired()) {
    pollfd entry{fd_, POLLIN, 0};
    int ready = ::poll(&entry, 1, deadline.poll_timeout_ms(50));
    if (ready <= 0) continue;
    ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
    if (n == 0) return true;
    if (n < 0 && errno != EINTR && errno != EAGAIN) return true;  // reset counts as closed
  }
  return false;
}

std::string RawConnection::read_frame(std::chrono::milliseconds timeout) {
  Deadline deadline = Deadline::after(timeout);
  std::string data;
  size_t want = protocol::kHeaderBytes;
  bool have_header = false;
  while (data.size() < want) {
    pollfd entry{fd_, POLLIN, 0};
    if (deadline.expired()) return "";
    if (::poll(&entry, 1, deadline.poll_timeout_ms(50)) <= 0) continue;
    char buffer[4096];
    ssize_t n = ::recv(fd_, buffer, std::min(sizeof(buffer), want - data.size()), 0);
    if (n <= 0) return "";
    data.append(buffer, static_cast<size_t>(n));
    if (!have_header && data.size() == protocol::kHeaderBytes) {
      uint32_t payload = 0;
      std::memcpy(&payload, data.data() + 16, 4);  // little-endian host in these tests
      want += payload;
      have_header = true;
    }
  }
  return data;
}

std::string hello_frame(uint64_t request_id, int rank, const std::string& group) {
  return protocol::FrameWriter(protocol::MessageType::kHello, request_id)
      .i64(rank)
      .str(group)
      .u64(0)
      .finish();
}

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  Deadline deadline = Deadline::after(timeout);
  while (!deadline.expired()) {
    if (condition()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return condition();
}

std::unique_ptr<Client> StoreConformance::connect(ClientOptions options) {
  if (!options.job_namespace) {
    // One namespace per test (and process): suites sharing one etcd cluster never meet.
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    options.job_namespace = std::string(test->test_suite_name()) + "." + test->name() + "." +
                            std::to_string(::getpid());
  }
  store_->configure(options);
  return Client::connect(store_->url(), options);
}

namespace {

class TcpTestStore : public TestStore {
 public:
  TcpTestStore() : server_(Server::start(ServerOptions{})) {}
  std::string url() override { return server_->url(); }
  Server* tcp_server() override { return server_.get(); }

 private:
  std::unique_ptr<Server> server_;
};

}  // namespace

StoreKind tcp_store_kind() {
  return {"Tcp", [] { return std::make_unique<TcpTestStore>(); }};
}

}  // namespace memloom::store::testing
