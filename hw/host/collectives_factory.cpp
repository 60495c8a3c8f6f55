#include "hw/host/collectives_factory.h"

#include "hw/host/hierarchical_collectives.h"

namespace memloom::host {

std::unique_ptr<hal::Collectives> create_collectives(const hal::GroupSpec& group,
                                                     hal::Bootstrap& bootstrap, Deadline deadline,
                                                     std::unique_ptr<BufferStaging> staging) {
  return std::make_unique<HierarchicalCollectives>(group, bootstrap, deadline, std::move(staging));
}

}  // namespace memloom::host
