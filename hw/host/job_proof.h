// The proof both ends of a transport connection give that they belong to one job: each shows it
// knows the job's secret (hal::TransportOptions::job_secret) by an HMAC over fresh nonces of both
// sides and the serving endpoint's address, so a proof seen on one connection is worth nothing on
// another, and neither side's proof can be reflected as the other's. The UCX transport exchanges
// it in active messages on each new endpoint, before it serves a request or hands out a remote key
// (ucx_job_gate.h).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "hw/hal/transport.h"

namespace memloom::host {

inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kProofBytes = 32;  // HMAC-SHA256
using Nonce = std::array<uint8_t, kNonceBytes>;
using Proof = std::array<uint8_t, kProofBytes>;

// Fresh random bytes from the CSPRNG (throws kSystem when it fails).
Nonce random_nonce();

// Which side proves: the two sides' proofs differ.
enum class ProofRole { kServer, kRequester };

// HMAC-SHA256(secret, role label || length-prefixed server address || requester nonce || server
// nonce).
Proof prove(const hal::JobSecret& secret, ProofRole role, const std::string& server_address,
            const Nonce& requester_nonce, const Nonce& server_nonce);

// Constant-time comparison of a received proof with the expected one.
bool proof_matches(const Proof& expected, const uint8_t* received);

}  // namespace memloom::host
