// The peers an instance has talked to, as published in the config store, with their same-node data
// paths (the network path is the instance's HAL transport, to the address a peer published).
// A peer is read from the store on first use and again after it failed (it may have restarted
// under the same uniqueId), so nobody else has to restart.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "hw/hal/memory_domain.h"
#include "memloom/deadline.h"
#include "src/smem/trans/device_path.h"
#include "src/smem/trans/direct_path.h"
#include "src/smem/trans/peer_record.h"
#include "src/store/client.h"

namespace memloom::smem::trans {

struct Peer {
  explicit Peer(PeerRecord published) : record(std::move(published)) {}
  // Still there: its process runs and its instance was not destroyed (peers elsewhere: true).
  bool alive() const { return (!direct || direct->alive()) && (!device || device->alive()); }
  PeerRecord record;
  // For peers on this node when direct copies are allowed:
  std::unique_ptr<DirectPath> direct;  // host memory: the CPU reaches it (cross-memory attach)
  std::unique_ptr<DevicePath> device;  // with staging: device memory, which only streams reach
  std::atomic<bool> cross_memory_denied{false};
};

class PeerDirectory {
 public:
  // map_tables: set up a same-node path to peers on this node (off when the instance may not use
  // it): the DirectPath, and with `staging` the DevicePath too (its streams copy, `domain`
  // imports).
  PeerDirectory(std::shared_ptr<store::Client> store, std::string my_node, bool map_tables,
                std::shared_ptr<StreamPool> staging, hal::MemoryDomain* domain);
  // The instance published as unique_id now. Throws kNotFound when none is published,
  // kCommunication when the published one is gone.
  std::shared_ptr<Peer> find(const std::string& unique_id, Deadline deadline);
  // Drops `peer` from the cache (if still there) after its transfer failed.
  void forget(const std::string& unique_id, const std::shared_ptr<Peer>& peer);

 private:
  std::shared_ptr<store::Client> store_;
  std::string my_node_;
  bool map_tables_;
  std::shared_ptr<StreamPool> staging_;
  hal::MemoryDomain* domain_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Peer>> peers_;
};

}  // namespace memloom::smem::trans
