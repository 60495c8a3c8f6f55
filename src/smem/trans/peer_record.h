// What an instance publishes about itself in the config store, under its uniqueId, so that peers
// can find it and choose a data path.
#pragma once

#include <sys/types.h>

#include <string>

namespace memloom::smem::trans {

struct PeerRecord {
  std::string node;  // MEMLOOM_NODE, else the host identity: who may copy directly
  pid_t pid = 0;
  std::string incarnation;  // random per instance: tells a restarted instance from the old one
  int role = 0;             // smem_trans_role_t
  std::string table_token;  // FdBroker token of the RegionTable (same-node peers map it)
  std::string transport;    // its HAL transport's address: the network path to it

  std::string encode() const;
  // Throws kCommunication on a malformed record.
  static PeerRecord decode(const std::string& text);
};

// The store key of an instance.
std::string peer_key(const std::string& unique_id);

}  // namespace memloom::smem::trans
