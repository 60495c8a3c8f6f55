#include "hw/host/job_proof.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstring>
#include <vector>

#include "memloom/error.h"

namespace memloom::host {

Nonce random_nonce() {
  Nonce nonce{};
  if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1) {
    raise(Status::kSystem, "the system's random generator (OpenSSL RAND_bytes) failed");
  }
  return nonce;
}

Proof prove(const hal::JobSecret& secret, ProofRole role, const std::string& server_address,
            const Nonce& requester_nonce, const Nonce& server_nonce) {
  // Fixed-size fields around one length-prefixed text: no two transcripts encode alike.
  const char* label =
      role == ProofRole::kServer ? "memloom-transport-v1 server" : "memloom-transport-v1 requester";
  std::vector<uint8_t> message(label, label + std::strlen(label) + 1);
  const auto length = static_cast<uint32_t>(server_address.size());
  for (int shift = 24; shift >= 0; shift -= 8) message.push_back((length >> shift) & 0xff);
  message.insert(message.end(), server_address.begin(), server_address.end());
  message.insert(message.end(), requester_nonce.begin(), requester_nonce.end());
  message.insert(message.end(), server_nonce.begin(), server_nonce.end());
  Proof proof{};
  unsigned int proof_length = 0;
  if (HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), message.data(),
           message.size(), proof.data(), &proof_length) == nullptr ||
      proof_length != proof.size()) {
    raise(Status::kSystem, "HMAC-SHA256 (OpenSSL) failed");
  }
  return proof;
}

bool proof_matches(const Proof& expected, const uint8_t* received) {
  return CRYPTO_memcmp(expected.data(), received, expected.size()) == 0;
}

}  // namespace memloom::host
