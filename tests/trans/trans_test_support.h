// Helpers shared by the TRANS tests: an in-process store, free uniqueIds, configs, random data
// and a store-based barrier for multi-process tests.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "smem/host/smem_trans.h"
#include "src/store/client.h"
#include "src/store/server.h"

namespace memloom::trans_test {

// "127.0.0.1:<a port nobody listens on right now>".
std::string free_unique_id(const std::string& ip = "127.0.0.1");

// A config with the given role, paths and timeout.
smem_trans_config_t make_config(smem_trans_role_t role,
                                uint32_t data_ops = SMEMB_DATA_OP_SDMA | SMEMB_DATA_OP_HOST_TCP,
                                uint32_t timeout_s = 10);

// The data paths tests run over: direct same-node copies, TCP, and TCP through host buffers with
// stream copies (the CUDA backend's path, forced on the emulated one by MEMLOOM_TRANS_STAGING).
enum class PathMode { kDirect, kTcp, kStaged };
uint32_t data_ops_for(PathMode mode);
// Sets or clears MEMLOOM_TRANS_STAGING for instances created from now on.
void use_path(PathMode mode);
std::string path_name(PathMode mode);

// Bytes from a seeded generator: every process can compute any other's data.
std::vector<uint8_t> random_bytes(size_t size, uint64_t seed);
void fill_random(void* data, size_t size, uint64_t seed);

// A fresh seed per test run (data must differ between runs).
uint64_t fresh_seed();

// smem_trans_init on construction, smem_trans_uninit on destruction, plus a store server.
class TransEnvironment {
 public:
  TransEnvironment();
  ~TransEnvironment();
  const std::string& store_url() const { return store_url_; }

 private:
  std::unique_ptr<store::Server> server_;
  std::string store_url_;
};

// smem_trans_init(config) and an instance named *id (a free uniqueId) at store_url; NULL (and
// smem_get_last_err_msg) when either fails.
smem_trans_t init_and_create(const std::string& store_url, const smem_trans_config_t& config,
                             std::string* id);

// Collective over `size` processes through the store: returns once all arrived (throws on timeout).
void store_barrier(store::Client& client, const std::string& name, int size,
                   std::chrono::milliseconds timeout = std::chrono::seconds(30));
// Publishes / waits for a value under the job's namespace.
void publish(store::Client& client, const std::string& key, const std::string& value);
std::string await(store::Client& client, const std::string& key,
                  std::chrono::milliseconds timeout = std::chrono::seconds(30));

// Number of open file descriptors of this process, and its resident memory.
size_t open_fd_count();
size_t resident_bytes();

}  // namespace memloom::trans_test
