#include "src/smem/trans/peer_directory.h"

#include <unistd.h>

#include <cerrno>

#include "memloom/error.h"
#include "src/core/fd_broker.h"
#include "src/store/call_deadline.h"

namespace memloom::smem::trans {

PeerDirectory::PeerDirectory(std::shared_ptr<store::Client> store, std::string my_node,
                             bool map_tables, std::shared_ptr<StreamPool> staging,
                             hal::MemoryDomain* domain)
    : store_(std::move(store)),
      my_node_(std::move(my_node)),
      map_tables_(map_tables),
      staging_(std::move(staging)),
      domain_(domain) {}

std::shared_ptr<Peer> PeerDirectory::find(const std::string& unique_id, Deadline deadline) {
  const store::CallDeadlineScope store_calls(deadline);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = peers_.find(unique_id);
    if (it != peers_.end()) {
      if (it->second->alive()) return it->second;
      peers_.erase(it);  // exited or destroyed: maybe a new instance took the name
    }
  }
  // Looked up once, without waiting: a peer that is not published is an error, not a wait.
  auto published = store_->get(peer_key(unique_id), std::chrono::milliseconds(0));
  if (!published) {
    raise(Status::kNotFound,
          "no transfer instance named '" + unique_id + "' is registered in the config store");
  }
  auto peer = std::make_shared<Peer>(PeerRecord::decode(*published));
  if (map_tables_ && peer->record.node == my_node_) {
    int table_fd = -1;
    try {
      table_fd = core::FdBroker::fetch(peer->record.table_token, deadline);
    } catch (const Error& error) {
      raise(error.status() == Status::kTimeout ? Status::kTimeout : Status::kCommunication,
            "transfer instance '" + unique_id + "' (pid " + std::to_string(peer->record.pid) +
                ") is gone: " + error.what());
    }
    if (staging_ && domain_ != nullptr) {
      // Device memory goes by the device path, host memory by cross-memory attach: each path
      // reads the peer's table through a descriptor of its own.
      const int device_table_fd = ::dup(table_fd);
      if (device_table_fd < 0) {
        const int error = errno;
        ::close(table_fd);
        raise_errno("duplicating the region table descriptor of peer '" + unique_id + "'", error);
      }
      try {
        peer->device = std::make_unique<DevicePath>(unique_id, peer->record.pid, device_table_fd,
                                                    *domain_, staging_);
      } catch (...) {
        ::close(table_fd);
        throw;
      }
    }
    peer->direct = std::make_unique<DirectPath>(unique_id, peer->record.pid, table_fd);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = peers_.emplace(unique_id, peer);
  if (!inserted) it->second = peer;
  return peer;
}

void PeerDirectory::forget(const std::string& unique_id, const std::shared_ptr<Peer>& peer) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = peers_.find(unique_id);
  if (it != peers_.end() && it->second == peer) peers_.erase(it);
}

}  // namespace memloom::smem::trans
