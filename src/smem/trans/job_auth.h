// Proof that a TRANS peer belongs to the job. The instances of one job share its config store, so
// the first one stores a random secret there and every instance reads it back; a data connection
// serves reads and writes only after both ends proved they know it (wire_format.h), by HMACs over
// fresh nonces of both sides, so a proof seen on one connection is worth nothing on another.
// Whoever can read the config store can join the job: the store's TLS protects it when on.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace memloom::store {
class Client;
}

namespace memloom::smem::trans {

inline constexpr size_t kSecretBytes = 32;
inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kProofBytes = 32;  // HMAC-SHA256

using JobSecret = std::array<uint8_t, kSecretBytes>;
using Nonce = std::array<uint8_t, kNonceBytes>;
using Proof = std::array<uint8_t, kProofBytes>;

// The store key of the job's secret.
std::string job_secret_key();

// The job's secret: created (CSPRNG) and stored with an atomic create-if-absent by the first
// instance, read by every later one, so all instances of a store agree. Throws what the store
// throws (kCommunication, kTimeout), kSystem when the CSPRNG fails, kCommunication when the stored
// value is malformed.
JobSecret load_or_create_job_secret(store::Client& store);

// Fresh random bytes from the CSPRNG (throws kSystem when it fails).
Nonce random_nonce();

// Which side proves: the two sides' proofs differ, so neither can reflect the other's.
enum class ProofRole { kServer, kInitiator };

// HMAC-SHA256(secret, role label || length-prefixed uniqueId || initiator nonce || server nonce).
Proof prove(const JobSecret& secret, ProofRole role, const std::string& unique_id,
            const Nonce& initiator_nonce, const Nonce& server_nonce);

// Constant-time comparison of a received proof with the expected one.
bool proof_matches(const Proof& expected, const uint8_t* received);

}  // namespace memloom::smem::trans
