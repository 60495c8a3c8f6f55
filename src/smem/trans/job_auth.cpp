#include "src/smem/trans/job_auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstring>
#include <vector>

#include "memloom/error.h"
#include "src/base/hex.h"
#include "src/store/client.h"

namespace memloom::smem::trans {
namespace {

void fill_random(uint8_t* data, size_t bytes) {
  if (RAND_bytes(data, static_cast<int>(bytes)) != 1) {
    raise(Status::kSystem, "the system's random generator (OpenSSL RAND_bytes) failed");
  }
}

// The store's values are text: the secret travels as hex.
std::string to_hex(const JobSecret& secret) {
  return base::hex_bytes(secret.data(), secret.size());
}

JobSecret from_hex(const std::string& text) {
  JobSecret secret{};
  const bool valid = base::parse_hex_bytes(text, secret.data(), secret.size());
  if (!valid) {
    raise(Status::kCommunication,
          "the config store holds a malformed TRANS job secret under '" + job_secret_key() + "'");
  }
  return secret;
}

}  // namespace

std::string job_secret_key() {
  return "memloom/smem/trans/job_secret";
}

JobSecret load_or_create_job_secret(store::Client& store) {
  JobSecret fresh{};
  fill_random(fresh.data(), fresh.size());
  // Create-if-absent: of instances starting together exactly one stores its secret, and every
  // other one reads that one back from the failed swap.
  std::string current;
  if (store.compare_and_swap(job_secret_key(), "", to_hex(fresh), /*expected_missing=*/true,
                             &current)) {
    return fresh;
  }
  return from_hex(current);
}

Nonce random_nonce() {
  Nonce nonce{};
  fill_random(nonce.data(), nonce.size());
  return nonce;
}

Proof prove(const JobSecret& secret, ProofRole role, const std::string& unique_id,
            const Nonce& initiator_nonce, const Nonce& server_nonce) {
  // Fixed-size fields around one length-prefixed text: no two transcripts encode alike.
  const char* label =
      role == ProofRole::kServer ? "memloom-trans-v2 server" : "memloom-trans-v2 initiator";
  std::vector<uint8_t> message(label, label + std::strlen(label) + 1);
  const auto length = static_cast<uint32_t>(unique_id.size());
  for (int shift = 24; shift >= 0; shift -= 8) message.push_back((length >> shift) & 0xff);
  message.insert(message.end(), unique_id.begin(), unique_id.end());
  message.insert(message.end(), initiator_nonce.begin(), initiator_nonce.end());
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

}  // namespace memloom::smem::trans
