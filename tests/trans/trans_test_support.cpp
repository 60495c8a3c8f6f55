#include "tests/trans/trans_test_support.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>

#include "memloom/error.h"

namespace memloom::trans_test {

std::string free_unique_id(const std::string& ip) {
  const bool v6 = ip.find(':') != std::string::npos;
  int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_storage storage{};
  socklen_t length = 0;
  if (v6) {
    auto* address = reinterpret_cast<sockaddr_in6*>(&storage);
    address->sin6_family = AF_INET6;
    ::inet_pton(AF_INET6, ip.c_str(), &address->sin6_addr);
    length = sizeof(sockaddr_in6);
  } else {
    auto* address = reinterpret_cast<sockaddr_in*>(&storage);
    address->sin_family = AF_INET;
    ::inet_pton(AF_INET, ip.c_str(), &address->sin_addr);
    length = sizeof(sockaddr_in);
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&storage), length) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot find a free port on " + ip);
  }
  ::close(fd);
  uint16_t port = v6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port)
                     : ntohs(reinterpret_cast<sockaddr_in*>(&storage)->sin_port);
  return (v6 ? "[" + ip + "]" : ip) + ":" + std::to_string(port);
}

smem_trans_config_t make_config(smem_trans_role_t role, uint32_t data_ops, uint32_t timeout_s) {
  smem_trans_config_t config;
  smem_trans_config_init(&config);
  config.role = role;
  config.dataOpType = static_cast<smem_bm_data_op_type>(data_ops);
  config.initTimeout = timeout_s;
  return config;
}

uint32_t data_ops_for(PathMode mode) {
  return mode == PathMode::kTcp ? SMEMB_DATA_OP_HOST_TCP : SMEMB_DATA_OP_SDMA;
}

void use_path(PathMode mode) {
  if (mode == PathMode::kStaged) {
    ::setenv("MEMLOOM_TRANS_STAGING", "1", 1);
  } else {
    ::unsetenv("MEMLOOM_TRANS_STAGING");
  }
}

std::string path_name(PathMode mode) {
  return mode == PathMode::kDirect ? "Direct" : mode == PathMode::kTcp ? "Tcp" : "Staged";
}

void fill_random(void* data, size_t size, uint64_t seed) {
  std::mt19937_64 generator(seed);
  auto* bytes = static_cast<uint8_t*>(data);
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t word = generator();
    std::memcpy(bytes + i, &word, 8);
  }
  uint64_t word = generator();
  for (; i < size; ++i, word >>= 8) bytes[i] = static_cast<uint8_t>(word);
}

std::vector<uint8_t> random_bytes(size_t size, uint64_t seed) {
  std::vector<uint8_t> data(size);
  fill_random(data.data(), size, seed);
  return data;
}

uint64_t fresh_seed() {
  std::random_device random;
  return (static_cast<uint64_t>(random()) << 32) ^ random();
}

TransEnvironment::TransEnvironment() {
  store::ServerOptions options;
  options.listen_url = "tcp://127.0.0.1:0";
  server_ = store::Server::start(options);
  store_url_ = server_->url();
  smem_trans_config_t config = make_config(SMEM_TRANS_BOTH);
  if (smem_trans_init(&config) != 0) throw std::runtime_error("smem_trans_init failed");
}

TransEnvironment::~TransEnvironment() {
  smem_trans_uninit(0);
  server_.reset();
}

void store_barrier(store::Client& client, const std::string& name, int size,
                   std::chrono::milliseconds timeout) {
  int64_t arrived = client.add("barrier/" + name, 1);
  if (arrived == size) client.set("barrier/" + name + "/open", "1");
  if (!client.get("barrier/" + name + "/open", timeout)) {
    raise(Status::kTimeout, "barrier '" + name + "' timed out");
  }
}

void publish(store::Client& client, const std::string& key, const std::string& value) {
  client.set(key, value);
}

std::string await(store::Client& client, const std::string& key,
                  std::chrono::milliseconds timeout) {
  auto value = client.get(key, timeout);
  if (!value) raise(Status::kTimeout, "timed out waiting for '" + key + "'");
  return *value;
}

size_t open_fd_count() {
  size_t count = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  while (dirent* entry = ::readdir(dir)) count += entry->d_name[0] != '.';
  ::closedir(dir);
  return count;
}

}  // namespace memloom::trans_test

namespace memloom::trans_test {

size_t resident_bytes() {
  size_t pages = 0, resident = 0;
  if (FILE* statm = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(statm, "%zu %zu", &pages, &resident) != 2) resident = 0;
    std::fclose(statm);
  }
  return resident * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

smem_trans_t init_and_create(const std::string& store_url, const smem_trans_config_t& config,
                             std::string* id) {
  if (smem_trans_init(&config) != SMEM_SUCCESS) return nullptr;
  *id = free_unique_id();
  return smem_trans_create(store_url.c_str(), id->c_str(), &config);
}

}  // namespace memloom::trans_test
