// The peers an instance has talked to, as published in the config store, with their data paths.
// A peer is read from the store on first use and again after it failed (it may have restarted
// under the same uniqueId), so nobody else has to restart.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "memloom/deadline.h"
#include "src/smem/trans/direct_path.h"
#include "src/smem/trans/peer_record.h"
#include "src/smem/trans/tcp_channel.h"
#include "src/store/client.h"

namespace memloom::smem::trans {

struct Peer {
  Peer(const std::string& unique_id, PeerRecord published, int staging_device)
      : record(std::move(published)), tcp(EndpointAddress::parse(unique_id), staging_device) {}
  PeerRecord record;
  std::unique_ptr<DirectPath>
      direct;  // set for peers on this node (when direct copies are allowed)
  TcpChannel tcp;
  std::atomic<bool> cross_memory_denied{false};
};

class PeerDirectory {
 public:
  // map_tables: set up the direct path to same-node peers (off when the instance may not use it).
  // staging_device: for the peers' TCP channels (-1: no staging).
  PeerDirectory(std::shared_ptr<store::Client> store, std::string my_node, bool map_tables,
                int staging_device);
  // The instance published as unique_id now. Throws kNotFound when none is published,
  // kCommunication when the published one is gone.
  std::shared_ptr<Peer> find(const std::string& unique_id, Deadline deadline);
  // Drops `peer` from the cache (if still there) after its transfer failed.
  void forget(const std::string& unique_id, const std::shared_ptr<Peer>& peer);

 private:
  std::shared_ptr<store::Client> store_;
  std::string my_node_;
  bool map_tables_;
  int staging_device_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Peer>> peers_;
};

}  // namespace memloom::smem::trans
