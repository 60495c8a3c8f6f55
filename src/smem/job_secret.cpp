#include "src/smem/job_secret.h"

#include <openssl/rand.h>

#include "memloom/error.h"
#include "src/base/hex.h"
#include "src/store/client.h"

namespace memloom::smem {

std::string job_secret_key() {
  return "memloom/smem/job_secret";
}

hal::JobSecret load_or_create_job_secret(store::Client& store) {
  hal::JobSecret fresh{};
  if (RAND_bytes(fresh.data(), static_cast<int>(fresh.size())) != 1) {
    raise(Status::kSystem, "the system's random generator (OpenSSL RAND_bytes) failed");
  }
  // Create-if-absent: of callers starting together exactly one stores its secret, and every
  // other one reads that one back from the failed swap. The store's values are text: hex.
  std::string current;
  if (store.compare_and_swap(job_secret_key(), "", base::hex_bytes(fresh.data(), fresh.size()),
                             /*expected_missing=*/true, &current)) {
    return fresh;
  }
  hal::JobSecret secret{};
  if (!base::parse_hex_bytes(current, secret.data(), secret.size())) {
    raise(Status::kCommunication,
          "the config store holds a malformed job secret under '" + job_secret_key() + "'");
  }
  return secret;
}

}  // namespace memloom::smem
