#include "hw/host/tcp_wire.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "hw/host/job_proof.h"
#include "memloom/error.h"
#include "src/base/fd_wait.h"
#include "src/base/log.h"
#include "src/base/tcp_address.h"

namespace memloom::host::wire {
namespace {

// The transport's own reading: the port after the last ':', checked before the host; brackets
// mean IPv6.
constexpr base::TcpAddressRules kTransportUrl = {.split_at_last_colon = true,
                                                 .port_syntax = base::PortSyntax::kStrtol};

const char* why(base::TcpAddressFault fault) {
  using Fault = base::TcpAddressFault;
  switch (fault) {
    case Fault::kNoScheme:
      return "has no tcp:// scheme";
    case Fault::kNoPort:
      return "has no port";
    case Fault::kEmptyPort:
    case Fault::kBadPort:
    case Fault::kPortOutOfRange:
      return "has an invalid port";
    case Fault::kNotIpv6:
      return "has an invalid IPv6 address";
    // kTransportUrl reports none of the first four: with its split at the last ':', any other
    // fault of the host is that of an IPv4 literal.
    case Fault::kUnclosedBracket:
    case Fault::kNoColonAfterBracket:
    case Fault::kUnbracketedIpv6:
    case Fault::kEmptyHost:
    case Fault::kNotIpv4:
      return "has an invalid IPv4 address";
    case Fault::kNone:
      break;
  }
  return "";
}

constexpr size_t kCongestionNameBytes = 16;  // the kernel's TCP_CA_NAME_MAX

struct CongestionChoice {
  bool keep_default = false;
  std::vector<std::string> preferred;  // tried in order
  bool only_replace_pacing = true;     // change only a connection that starts with bbr*
};

CongestionChoice congestion_choice() {
  CongestionChoice choice;
  const char* named = std::getenv("MEMLOOM_TCP_CONGESTION");
  if (named == nullptr || *named == '\0') {
    choice.preferred = {"cubic", "reno"};
  } else if (std::string(named) == "default") {
    choice.keep_default = true;
  } else {
    choice.preferred = {named};
    choice.only_replace_pacing = false;
  }
  return choice;
}

void choose_congestion_control(int fd) {
  static const CongestionChoice choice = congestion_choice();
  if (choice.keep_default) return;
  if (choice.only_replace_pacing) {
    char current[kCongestionNameBytes] = {};
    socklen_t length = sizeof(current);
    if (::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, current, &length) != 0) return;
    if (std::strncmp(current, "bbr", 3) != 0) return;
  }
  for (const std::string& name : choice.preferred) {
    if (::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(),
                     static_cast<socklen_t>(name.size())) == 0) {
      return;
    }
  }
  // Not available or not permitted: the system's algorithm still moves the bytes, only slower.
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    MEMLOOM_LOG(kWarn, "transport connections keep the system's TCP congestion control: "
                           << choice.preferred.front() << " is not available ("
                           << std::strerror(errno) << ")");
  }
}

}  // namespace

Endpoint parse_tcp_url(const std::string& url) {
  base::ParsedTcpAddress parsed = base::parse_tcp_address(url, kTransportUrl);
  if (parsed.fault != base::TcpAddressFault::kNone) {
    raise(Status::kInvalidInput, "transport address '" + url + "' " + why(parsed.fault) +
                                     " (expected tcp://IP:PORT or tcp://[IPv6]:PORT)");
  }
  return Endpoint{parsed.address.storage, parsed.address.length};
}

bool wait_ready(int fd, short events, Deadline deadline) {
  // The wire's callers take false as a failed connection and must not throw (the server's
  // thread), so a failing poll() answers false as a deadline does. An interruption (only on a
  // caller's thread: the server's threads install no check) still ends the caller's call.
  try {
    return base::wait_ready(fd, events, deadline);
  } catch (const Error& error) {
    if (error.status() == Status::kInterrupted) throw;
    return false;
  }
}

bool read_exact(int fd, void* data, size_t bytes, Deadline deadline, std::string* error) {
  auto* out = static_cast<char*>(data);
  while (bytes > 0) {
    ssize_t n = ::recv(fd, out, bytes, 0);
    if (n > 0) {
      out += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) {
      if (error) *error = "connection closed by the peer";
      return false;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      if (error) *error = std::strerror(errno);
      return false;
    }
    if (!wait_ready(fd, POLLIN, deadline)) {
      if (error) *error = "timed out";
      return false;
    }
  }
  return true;
}

bool write_exact(int fd, const void* data, size_t bytes, Deadline deadline, std::string* error) {
  auto* in = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::send(fd, in, bytes, MSG_NOSIGNAL);
    if (n > 0) {
      in += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      if (error) *error = std::strerror(errno);
      return false;
    }
    if (!wait_ready(fd, POLLOUT, deadline)) {
      if (error) *error = "timed out";
      return false;
    }
  }
  return true;
}

namespace {

bool move_iov_exact(int fd, std::vector<iovec>& iovs, bool send, Deadline deadline) {
  size_t index = 0;
  auto skip_empty = [&] {
    while (index < iovs.size() && iovs[index].iov_len == 0) ++index;
  };
  skip_empty();
  while (index < iovs.size()) {
    msghdr message{};
    message.msg_iov = iovs.data() + index;
    message.msg_iovlen = std::min<size_t>(iovs.size() - index, IOV_MAX);
    const ssize_t n = send ? ::sendmsg(fd, &message, MSG_NOSIGNAL) : ::recvmsg(fd, &message, 0);
    if (n > 0) {
      for (auto left = static_cast<size_t>(n); left > 0;) {
        const size_t step = std::min(left, iovs[index].iov_len);
        iovs[index].iov_base = static_cast<char*>(iovs[index].iov_base) + step;
        iovs[index].iov_len -= step;
        left -= step;
        if (iovs[index].iov_len == 0) ++index;
      }
      skip_empty();
      continue;
    }
    if (n == 0 && !send) return false;  // the peer closed the connection
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
    if (!wait_ready(fd, send ? POLLOUT : POLLIN, deadline)) return false;
  }
  return true;
}

}  // namespace

bool read_iov_exact(int fd, std::vector<iovec>& iovs, Deadline deadline) {
  return move_iov_exact(fd, iovs, /*send=*/false, deadline);
}

bool write_iov_exact(int fd, std::vector<iovec>& iovs, Deadline deadline) {
  return move_iov_exact(fd, iovs, /*send=*/true, deadline);
}

void set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    raise_errno("making a transport socket non-blocking", errno);
  }
}

void tune_connection(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  choose_congestion_control(fd);
}

void prove_membership(int fd, const std::string& peer, const hal::JobSecret& secret,
                      Deadline deadline) {
  auto failed = [&](const std::string& why) {
    raise(deadline.expired() ? Status::kTimeout : Status::kCommunication,
          "transport endpoint " + peer + ": " + why);
  };
  wire::ServerHello hello{};
  if (!wire::read_exact(fd, &hello, sizeof(hello), deadline)) failed("no hello from it");
  if (hello.magic != wire::kHelloMagic || hello.version != wire::kHelloVersion) {
    failed("it does not speak this transport's protocol");
  }
  Nonce server_nonce{};
  std::memcpy(server_nonce.data(), hello.nonce, server_nonce.size());
  const Nonce nonce = random_nonce();
  wire::RequesterProof proof{wire::kHelloMagic, 0, {}, {}};
  std::memcpy(proof.nonce, nonce.data(), nonce.size());
  const Proof mine = prove(secret, ProofRole::kRequester, peer, nonce, server_nonce);
  std::memcpy(proof.proof, mine.data(), mine.size());
  wire::ServerVerdict verdict{};
  if (!wire::write_exact(fd, &proof, sizeof(proof), deadline) ||
      !wire::read_exact(fd, &verdict, sizeof(verdict), deadline)) {
    failed("it closed the connection during the job proof (a rank of another job?)");
  }
  if (verdict.magic != wire::kHelloMagic || verdict.status != 0) {
    failed("it refused this rank's proof of the job secret (a rank of another job?)");
  }
  if (!proof_matches(prove(secret, ProofRole::kServer, peer, nonce, server_nonce), verdict.proof)) {
    failed("it could not prove it knows the job secret (not a rank of this job)");
  }
}

}  // namespace memloom::host::wire
