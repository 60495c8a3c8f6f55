// The data port's defences (security finding 2): only instances of the job (they know the job's
// secret from the config store) read or write registered memory, a proof cannot be replayed, idle
// connections cost neither threads nor service, and running out of threads refuses connections
// instead of aborting the process. Adversaries speak the frame format on raw loopback sockets.
#include <grp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "smem/host/smem_trans.h"
#include "src/smem/trans/endpoint_address.h"
#include "src/smem/trans/job_auth.h"
#include "src/smem/trans/socket_io.h"
#include "src/smem/trans/wire_format.h"
#include "tests/support/forked_child.h"
#include "tests/trans/trans_test_support.h"

namespace memloom::trans_test {
namespace {

using Clock = std::chrono::steady_clock;
using smem::trans::EndpointAddress;
using smem::trans::UniqueFd;
using testing::ChildResult;
using testing::ChildUser;
using testing::fork_child;
using testing::wait_child;

// The frame format, spelled out here so the adversary speaks both protocol versions.
constexpr uint32_t kFrameMagicV1 = 0x5254'4c4d;  // "MLTR": no authentication
constexpr uint32_t kFrameMagicV2 = 0x3254'4c4d;  // "MLT2": the authenticated hello
constexpr uint32_t kHello = 1, kWrite = 2, kRead = 3, kProof = 4;
constexpr size_t kNonce = 32;
constexpr auto kStep = std::chrono::seconds(3);  // the bound of every raw socket step

static_assert(kFrameMagicV2 == smem::trans::wire::kFrameMagic &&
              kFrameMagicV1 == smem::trans::wire::kFrameMagicV1 &&
              kProof == static_cast<uint32_t>(smem::trans::wire::FrameKind::kProof));

struct Header {
  uint32_t magic, kind, op_count, reserved;
  uint64_t payload_bytes, sequence;
};
struct Op {
  uint64_t address, bytes;
};
struct Reply {
  uint32_t magic;
  int32_t status;
  uint64_t payload_bytes, sequence;
};

// A blocking-style raw client with bounded steps; every failure is "false".
class RawClient {
 public:
  explicit RawClient(const std::string& unique_id) {
    try {
      fd_ = smem::trans::connect_to(EndpointAddress::parse(unique_id), Deadline::after(kStep));
    } catch (const std::exception&) {
    }
  }
  bool send(const void* data, size_t bytes) {
    try {
      return fd_.valid() && smem::trans::send_exact(fd_.get(), data, bytes, Deadline::after(kStep));
    } catch (const std::exception&) {
      return false;
    }
  }
  bool send(const std::vector<uint8_t>& bytes) { return send(bytes.data(), bytes.size()); }
  bool receive(void* data, size_t bytes) {
    try {
      return fd_.valid() && smem::trans::recv_exact(fd_.get(), data, bytes, Deadline::after(kStep));
    } catch (const std::exception&) {
      return false;
    }
  }
  // A reply header and its payload; false when the connection failed or the payload is huge.
  bool reply(Reply* header, std::vector<uint8_t>* payload) {
    if (!receive(header, sizeof(*header)) || header->payload_bytes > (64u << 20)) return false;
    payload->resize(header->payload_bytes);
    return receive(payload->data(), payload->size());
  }

 private:
  UniqueFd fd_;
};

// Header, then payload (copied, not inserted: GCC 12 misreads inserts into small vectors).
std::vector<uint8_t> frame(const Header& header, const std::vector<uint8_t>& payload = {}) {
  std::vector<uint8_t> bytes(sizeof(header) + payload.size());
  std::memcpy(bytes.data(), &header, sizeof(header));
  if (!payload.empty()) std::memcpy(bytes.data() + sizeof(header), payload.data(), payload.size());
  return bytes;
}

// One descriptor, then `fill` bytes of 0xEE (a write's data).
std::vector<uint8_t> op_bytes(uint64_t address, uint64_t size, size_t fill = 0) {
  Op op{address, size};
  std::vector<uint8_t> bytes(sizeof(op) + fill, 0xEE);
  std::memcpy(bytes.data(), &op, sizeof(op));
  return bytes;
}

// After the connection's hello: a read of `size` bytes at `address`, then a write of 0xEE there.
// Returns bit 1 when the read was served, bit 2 when the write was.
int try_read_and_write(RawClient& client, uint32_t magic, uint64_t address, uint64_t size) {
  int served = 0;
  Reply reply{};
  std::vector<uint8_t> payload;
  if (client.send(frame(Header{magic, kRead, 1, 0, size, 1}, op_bytes(address, size))) &&
      client.reply(&reply, &payload) && reply.status == 0 && payload.size() == size) {
    served |= 1;
  }
  std::vector<uint8_t> write = op_bytes(address, 16, 16);
  if (client.send(frame(Header{magic, kWrite, 1, 0, 16, 2}, write)) &&
      client.reply(&reply, &payload) && reply.status == 0) {
    served |= 2;
  }
  return served;
}

// What an outsider who knows the uniqueId (and the format) but not the job's secret can try.
// Returns 0 when nothing was served, else the attempt's number times 4 plus what was served.
int outsider_attack(const std::string& id, uint64_t address, uint64_t size) {
  std::vector<uint8_t> name(id.begin(), id.end());
  // 1: the protocol without authentication.
  {
    RawClient client(id);
    Reply reply{};
    std::vector<uint8_t> payload;
    if (client.send(frame(Header{kFrameMagicV1, kHello, 0, 0, name.size(), 0}, name)) &&
        client.reply(&reply, &payload) && reply.status == 0) {
      if (int served = try_read_and_write(client, kFrameMagicV1, address, size)) return 4 + served;
    }
  }
  std::vector<uint8_t> hello(kNonce + name.size(), 0x42);
  std::memcpy(hello.data() + kNonce, name.data(), name.size());
  // 2: the authenticated hello, then a made-up proof; 3: no proof at all.
  for (int attempt = 2; attempt <= 3; ++attempt) {
    RawClient client(id);
    Reply reply{};
    std::vector<uint8_t> payload;
    if (!client.send(frame(Header{kFrameMagicV2, kHello, 0, 0, hello.size(), 0}, hello))) continue;
    if (!client.reply(&reply, &payload)) continue;
    if (attempt == 2) {
      client.send(frame(Header{kFrameMagicV2, kProof, 0, 0, 32, 1}, std::vector<uint8_t>(32, 7)));
      client.reply(&reply, &payload);  // the verdict, if any: the frames below tell
    }
    if (int served = try_read_and_write(client, kFrameMagicV2, address, size))
      return 4 * attempt + served;
  }
  return 0;
}

smem_trans_t create(const std::string& store_url, const std::string& id, smem_trans_role_t role,
                    uint32_t ops = SMEMB_DATA_OP_HOST_TCP) {
  smem_trans_config_t config = make_config(role, ops, 10);
  return smem_trans_create(store_url.c_str(), id.c_str(), &config);
}

size_t thread_count() {
  size_t count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task"))
    ++count;
  return count;
}

constexpr size_t kRegion = 1 << 16;

// A RECEIVER with kRegion registered bytes of seeded data.
struct Target {
  explicit Target(const std::string& store_url)
      : id(free_unique_id()), memory(random_bytes(kRegion, fresh_seed())), original(memory) {
    handle = create(store_url, id, SMEM_TRANS_RECEIVER);
    EXPECT_NE(handle, nullptr) << smem_get_last_err_msg();
    EXPECT_EQ(smem_trans_register_mem(handle, memory.data(), memory.size(), 0), SMEM_SUCCESS);
  }
  ~Target() {
    if (handle != nullptr) smem_trans_destroy(handle, 0);
  }
  uint64_t address() const { return reinterpret_cast<uintptr_t>(memory.data()); }
  std::string id;
  std::vector<uint8_t> memory;
  std::vector<uint8_t> original;
  smem_trans_t handle = nullptr;
};

TEST(TransSecurity, OutsiderWithoutTheJobSecretCannotReadOrWrite) {
  TransEnvironment environment;
  Target target(environment.store_url());
  ASSERT_NE(target.handle, nullptr);
  const pid_t child = fork_child([&] {
    ::alarm(60);  // never outlives a broken test
    return outsider_attack(target.id, target.address(), kRegion);
  });
  const ChildResult result = wait_child(child, std::chrono::seconds(40));
  EXPECT_EQ(result.exit_code, 0) << result.describe()
                                 << " (nonzero: attempt * 4 + 1 read served, + 2 write served)";
  EXPECT_EQ(target.memory, target.original) << "an outsider changed registered memory";

  // The instance still serves the job's own initiators.
  smem_trans_t member = create(environment.store_url(), free_unique_id(), SMEM_TRANS_SENDER);
  ASSERT_NE(member, nullptr) << smem_get_last_err_msg();
  std::vector<uint8_t> read(kRegion);
  EXPECT_EQ(
      smem_trans_read(member, read.data(), target.id.c_str(), target.memory.data(), kRegion, 0),
      SMEM_SUCCESS)
      << smem_get_last_err_msg();
  EXPECT_EQ(read, target.original);
  smem_trans_destroy(member, 0);
}

// The hello with `nonce`; returns the server's nonce (checking its proof) or nullopt.
std::optional<smem::trans::Nonce> hello(RawClient& client, const std::string& id,
                                        const smem::trans::JobSecret& secret,
                                        const smem::trans::Nonce& nonce) {
  std::vector<uint8_t> payload(nonce.size() + id.size());
  std::memcpy(payload.data(), nonce.data(), nonce.size());
  std::memcpy(payload.data() + nonce.size(), id.data(), id.size());
  Reply reply{};
  std::vector<uint8_t> answer;
  if (!client.send(frame(Header{kFrameMagicV2, kHello, 0, 0, payload.size(), 0}, payload)) ||
      !client.reply(&reply, &answer) || reply.status != 0 || answer.size() < 64) {
    return std::nullopt;
  }
  smem::trans::Nonce server_nonce{};
  std::memcpy(server_nonce.data(), answer.data(), server_nonce.size());
  const auto expected =
      smem::trans::prove(secret, smem::trans::ProofRole::kServer, id, nonce, server_nonce);
  EXPECT_TRUE(smem::trans::proof_matches(expected, answer.data() + 32)) << "the server's proof";
  return server_nonce;
}

// Sends `proof`; true when the server accepted it.
bool send_proof(RawClient& client, const smem::trans::Proof& proof) {
  Reply reply{};
  std::vector<uint8_t> answer;
  return client.send(frame(Header{kFrameMagicV2, kProof, 0, 0, proof.size(), 1},
                           std::vector<uint8_t>(proof.begin(), proof.end()))) &&
         client.reply(&reply, &answer) && reply.status == 0;
}

TEST(TransSecurity, ReplayedProofFromAnEarlierConnectionFails) {
  TransEnvironment environment;
  Target target(environment.store_url());
  ASSERT_NE(target.handle, nullptr);
  // The test plays a member that saw the job's secret in the store.
  auto store = store::Client::connect(environment.store_url());
  const smem::trans::JobSecret secret = smem::trans::load_or_create_job_secret(*store);
  const smem::trans::Nonce nonce = smem::trans::random_nonce();

  RawClient first(target.id);
  auto server_nonce = hello(first, target.id, secret, nonce);
  ASSERT_TRUE(server_nonce);
  const smem::trans::Proof proof = smem::trans::prove(secret, smem::trans::ProofRole::kInitiator,
                                                      target.id, nonce, *server_nonce);
  ASSERT_TRUE(send_proof(first, proof));
  EXPECT_EQ(try_read_and_write(first, kFrameMagicV2, target.address(), kRegion), 1 | 2)
      << "a member's read and write are served";
  target.original = target.memory;

  // The same hello and proof on a new connection: the server's nonce changed, the proof is stale.
  RawClient second(target.id);
  auto second_nonce = hello(second, target.id, secret, nonce);
  ASSERT_TRUE(second_nonce);
  EXPECT_NE(*second_nonce, *server_nonce);
  EXPECT_FALSE(send_proof(second, proof)) << "a replayed proof was accepted";
  EXPECT_EQ(try_read_and_write(second, kFrameMagicV2, target.address(), kRegion), 0);
  EXPECT_EQ(target.memory, target.original);
}

TEST(TransSecurity, InitiatorNamesAPeerOfAnotherJob) {
  TransEnvironment environment;
  // Another job (its own store, so its own secret) with an instance of its own.
  store::ServerOptions options;
  options.listen_url = "tcp://127.0.0.1:0";
  auto other_store = store::Server::start(options);
  Target stranger(other_store->url());
  ASSERT_NE(stranger.handle, nullptr);
  // Our store is made to point at it (a stale record, a misconfigured job).
  auto theirs = store::Client::connect(other_store->url());
  auto ours = store::Client::connect(environment.store_url());
  const std::string key = "memloom/smem/trans/peer/" + stranger.id;
  ours->set(key, await(*theirs, key));

  smem_trans_t member = create(environment.store_url(), free_unique_id(), SMEM_TRANS_SENDER);
  ASSERT_NE(member, nullptr) << smem_get_last_err_msg();
  std::vector<uint8_t> data(64, 0x5A);
  const auto start = Clock::now();
  EXPECT_EQ(smem_trans_write(member, data.data(), stranger.id.c_str(), stranger.memory.data(),
                             data.size(), 0),
            SMEM_COMM_ERROR);
  const std::string message = smem_get_last_err_msg();
  EXPECT_NE(message.find(stranger.id), std::string::npos) << message;
  EXPECT_NE(message.find("job"), std::string::npos) << message;
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(stranger.memory, stranger.original);
  smem_trans_destroy(member, 0);
}

TEST(TransSecurity, IdleConnectionsAreDroppedAndCostNoThreads) {
  constexpr int kIdle = 300;
  TransEnvironment environment;
  Target target(environment.store_url());
  ASSERT_NE(target.handle, nullptr);
  smem_trans_t member = create(environment.store_url(), free_unique_id(), SMEM_TRANS_SENDER);
  ASSERT_NE(member, nullptr) << smem_get_last_err_msg();

  const size_t threads_before = thread_count();
  const auto opened = Clock::now();
  std::vector<UniqueFd> idle;
  for (int i = 0; i < kIdle; ++i) {
    idle.push_back(
        smem::trans::connect_to(EndpointAddress::parse(target.id), Deadline::after(kStep)));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the server accepts them
  EXPECT_LT(thread_count(), threads_before + 16) << "silent connections hold threads";

  // A member's transfers go through meanwhile.
  std::vector<uint8_t> data = random_bytes(kRegion, fresh_seed());
  const auto transfer_start = Clock::now();
  EXPECT_EQ(
      smem_trans_write(member, data.data(), target.id.c_str(), target.memory.data(), kRegion, 0),
      SMEM_SUCCESS)
      << smem_get_last_err_msg();
  EXPECT_LT(Clock::now() - transfer_start, std::chrono::seconds(3));
  EXPECT_EQ(target.memory, data);

  // Every silent connection is closed by the hello deadline (5 s), plus a margin.
  const auto limit = opened + std::chrono::seconds(8);
  size_t closed = 0;
  std::vector<bool> seen(idle.size(), false);
  while (closed < idle.size() && Clock::now() < limit) {
    std::vector<pollfd> fds;
    std::vector<size_t> index;
    for (size_t i = 0; i < idle.size(); ++i) {
      if (seen[i]) continue;
      fds.push_back(pollfd{idle[i].get(), POLLIN | POLLRDHUP, 0});
      index.push_back(i);
    }
    if (::poll(fds.data(), fds.size(), 100) <= 0) continue;
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      char byte = 0;
      // The server sends nothing to a silent connection: readable means closed.
      if (::recv(fds[k].fd, &byte, 1, MSG_DONTWAIT) <= 0 || fds[k].revents & POLLRDHUP) {
        seen[index[k]] = true;
        ++closed;
      }
    }
  }
  EXPECT_EQ(closed, idle.size()) << "silent connections still open 8 s after they were made";
  smem_trans_destroy(member, 0);
}

// The child of ThreadExhaustionRefusesConnectionsWithoutAborting: a RECEIVER that then cannot
// create a thread (RLIMIT_NPROC 1, as `nobody` since root ignores the limit) until told.
int exhausted_receiver(const std::string& store_url, const std::string& id) {
  auto client = store::Client::connect(store_url);
  smem_trans_config_t config = make_config(SMEM_TRANS_RECEIVER, SMEMB_DATA_OP_HOST_TCP, 10);
  if (smem_trans_init(&config) != SMEM_SUCCESS) return 10;
  smem_trans_t handle = smem_trans_create(store_url.c_str(), id.c_str(), &config);
  static std::vector<uint8_t> memory(kRegion, 0);
  if (handle == nullptr) return 11;
  if (smem_trans_register_mem(handle, memory.data(), memory.size(), 0) != SMEM_SUCCESS) return 12;
  rlimit saved{};
  ::getrlimit(RLIMIT_NPROC, &saved);
  rlimit none = saved;
  none.rlim_cur = 1;
  if (::setrlimit(RLIMIT_NPROC, &none) != 0) return 13;
  publish(*client, "exhausted/address", std::to_string(reinterpret_cast<uintptr_t>(memory.data())));
  await(*client, "exhausted/tried");
  if (::setrlimit(RLIMIT_NPROC, &saved) != 0) return 14;
  publish(*client, "exhausted/restored", "1");
  await(*client, "exhausted/done");
  if (memory != std::vector<uint8_t>(kRegion, 0x77)) return 15;
  smem_trans_destroy(handle, 0);
  return 0;
}

TEST(TransSecurity, ThreadExhaustionRefusesConnectionsWithoutAborting) {
  // The child starts before this process has any thread of its own; it finds the store by retry.
  const std::string store_address = free_unique_id();
  const std::string store_url = "tcp://" + store_address;
  const std::string id = free_unique_id();
  const pid_t child = fork_child(
      [&] {
        ::alarm(60);  // never outlives a broken test
        return exhausted_receiver(store_url, id);
      },
      ChildUser::kNobody);  // root ignores RLIMIT_NPROC
  store::ServerOptions options;
  options.listen_url = store_url;
  auto server = store::Server::start(options);
  smem_trans_config_t config = make_config(SMEM_TRANS_SENDER, SMEMB_DATA_OP_HOST_TCP, 5);
  ASSERT_EQ(smem_trans_init(&config), SMEM_SUCCESS);
  auto client = store::Client::connect(store_url);
  smem_trans_t member = smem_trans_create(store_url.c_str(), free_unique_id().c_str(), &config);
  ASSERT_NE(member, nullptr) << smem_get_last_err_msg();
  auto* remote = reinterpret_cast<uint8_t*>(std::stoull(await(*client, "exhausted/address")));

  std::vector<uint8_t> data(kRegion, 0x77);
  // No thread to serve it: refused (any error), never a crash of the receiver.
  const int32_t refused = smem_trans_write(member, data.data(), id.c_str(), remote, kRegion, 0);
  std::string message = smem_get_last_err_msg();
  publish(*client, "exhausted/tried", "1");
  EXPECT_NE(refused, SMEM_SUCCESS) << "the receiver served without a thread?";
  // Threads again: the receiver serves as before.
  await(*client, "exhausted/restored");
  EXPECT_EQ(smem_trans_write(member, data.data(), id.c_str(), remote, kRegion, 0), SMEM_SUCCESS)
      << smem_get_last_err_msg() << " (the refused write said: " << message << ")";
  publish(*client, "exhausted/done", "1");
  const ChildResult result = wait_child(child, std::chrono::seconds(40));
  EXPECT_EQ(result.exit_code, 0) << result.describe();
  smem_trans_destroy(member, 0);
  smem_trans_uninit(0);
}

}  // namespace
}  // namespace memloom::trans_test
