// The world an smem_shm_init / smem_bm_init call joins: a config store client (and the store server
// when this process runs it), this process's rank, and the Group of all ranks. SHM and BM objects
// are created under it.
#pragma once

#include <memory>
#include <string>

#include "memloom/deadline.h"
#include "src/core/group.h"
#include "src/store/client.h"
#include "src/store/server.h"

namespace memloom::smem {

struct WorldOptions {
  std::string api;        // "shm" or "bm": namespaces the store keys
  std::string store_url;  // "tcp://IP:PORT"
  int world_size = 0;
  int rank = -1;  // -1: the store hands out the rank (auto ranking)
  int device = 0;
  bool start_server = false;  // run the store server here (rank 0; any one rank with auto ranking)
  Deadline deadline = Deadline::now();
  store::TlsSetting store_tls;  // for the store server and client (default: process-wide)
};

class SmemWorld {
 public:
  // Collective over world_size processes: connects, takes a rank, waits for every rank.
  static std::unique_ptr<SmemWorld> join(const WorldOptions& options);
  // Runs only a store server at `url` (MemFabric's startConfigStoreOnly).
  static std::unique_ptr<SmemWorld> serve_only(const std::string& url,
                                               const store::TlsSetting& tls = {});
  ~SmemWorld();

  bool has_rank() const { return group_ != nullptr; }
  int rank() const { return group_->rank(); }
  int size() const { return group_->size(); }
  int device() const { return device_; }
  core::Group& group() { return *group_; }
  std::shared_ptr<store::Client> client() { return client_; }
  const store::KeyPrefix& prefix() const { return prefix_; }

 private:
  explicit SmemWorld(store::KeyPrefix prefix) : prefix_(std::move(prefix)) {}

  store::KeyPrefix prefix_;
  std::unique_ptr<store::Server> server_;
  std::shared_ptr<store::Client> client_;
  std::shared_ptr<core::Group> group_;
  int device_ = 0;
};

}  // namespace memloom::smem
