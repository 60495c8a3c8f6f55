#include "hw/host/transport_choice.h"

#include <cstdlib>
#include <string>

#include "memloom/error.h"

namespace memloom::host {

TransportKind chosen_transport() {
  const char* value = std::getenv("MEMLOOM_TRANSPORT");
  if (value == nullptr || *value == '\0' || std::string(value) == "tcp") return TransportKind::kTcp;
  if (std::string(value) == "ucx") return TransportKind::kUcx;
  raise(Status::kInvalidInput,
        std::string("MEMLOOM_TRANSPORT=") + value + " is not a transport (tcp or ucx)");
}

const char* transport_name(TransportKind kind) {
  return kind == TransportKind::kUcx ? "ucx" : "tcp";
}

}  // namespace memloom::host
