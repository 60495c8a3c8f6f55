#include "hw/host/ucx_data_path.h"

#include <cstdlib>
#include <string>

#include "hw/host/ucx_capabilities.h"
#include "memloom/error.h"

namespace memloom::host {

UcxDataPath chosen_ucx_data_path() {
  const char* value = std::getenv("MEMLOOM_UCX_DATA_PATH");
  const std::string path = value == nullptr ? "" : value;
  if (path.empty() || path == "auto") {
    return ucx_offers_rdma() ? UcxDataPath::kRma : UcxDataPath::kAm;
  }
  if (path == "am") return UcxDataPath::kAm;
  if (path == "rma") return UcxDataPath::kRma;
  raise(Status::kInvalidInput,
        "MEMLOOM_UCX_DATA_PATH=" + path + " is not a UCX data path (auto, am or rma)");
}

}  // namespace memloom::host
