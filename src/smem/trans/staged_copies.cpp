#include "src/smem/trans/staged_copies.h"

#include <cstdlib>
#include <string>

#include "src/core/platform_loader.h"

namespace memloom::smem::trans {

bool staging_required() {
  const char* forced = std::getenv("MEMLOOM_TRANS_STAGING");
  if (forced != nullptr && std::string(forced) == "1") return true;
  return core::platform().name() != "emulated";
}

StagedCopies::StagedCopies(int device) : stream_(core::platform().create_stream(device)) {}

}  // namespace memloom::smem::trans
