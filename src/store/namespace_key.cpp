#include "src/store/namespace_key.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "memloom/error.h"
#include "src/store/protocol.h"

namespace memloom::store {

std::string namespace_key(std::string_view job_secret, std::string_view job_namespace) {
  if (job_secret.empty()) return "";
  // The label keeps these MACs apart from any other use of the same secret; the NUL ends it, and
  // namespaces cannot contain one, so no (label, namespace) pair reads as another.
  std::string message("memloom store job namespace key v1");
  message.push_back('\0');
  message.append(job_namespace);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_bytes = 0;
  if (HMAC(EVP_sha256(), job_secret.data(), static_cast<int>(job_secret.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac,
           &mac_bytes) == nullptr ||
      mac_bytes != protocol::kNamespaceKeyBytes) {
    raise(Status::kSystem, "cannot derive the job namespace key: HMAC-SHA256 failed");
  }
  return std::string(reinterpret_cast<const char*>(mac), mac_bytes);
}

}  // namespace memloom::store
