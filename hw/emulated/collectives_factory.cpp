#include "hw/emulated/collectives_factory.h"

#include "hw/emulated/hierarchical_collectives.h"
#include "hw/emulated/tcp_transport.h"

namespace memloom::emulated {

std::unique_ptr<hal::Collectives> create_collectives(const hal::GroupSpec& group,
                                                     hal::Bootstrap& bootstrap, Deadline deadline) {
  return std::make_unique<HierarchicalCollectives>(group, bootstrap, deadline);
}

std::unique_ptr<hal::Transport> create_transport() {
  return std::make_unique<TcpTransport>();
}

}  // namespace memloom::emulated
