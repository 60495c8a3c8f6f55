#include "hw/host/ucx_job_gate.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstring>
#include <vector>

#include "src/base/log.h"

namespace memloom::host {
namespace {

namespace msg = ucx_messages;

// Hellos an owner remembers until their proof comes: an outsider's flood evicts old ones instead
// of growing without bound.
constexpr size_t kMaxChallenges = 1024;

using Nonce = std::array<uint8_t, 32>;
using Proof = std::array<uint8_t, 32>;  // HMAC-SHA256

Nonce nonce_of(const uint8_t* bytes) {
  Nonce nonce{};
  std::memcpy(nonce.data(), bytes, nonce.size());
  return nonce;
}

// From the CSPRNG (throws kSystem when it fails).
Nonce random_nonce() {
  Nonce nonce{};
  if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1) {
    raise(Status::kSystem, "the system's random generator (OpenSSL RAND_bytes) failed");
  }
  return nonce;
}

enum class ProofRole { kServer, kRequester };

// HMAC-SHA256(secret, role label || length-prefixed server address || requester nonce || server
// nonce): fixed-size fields around one length-prefixed text, so no two transcripts encode alike.
Proof prove(const hal::JobSecret& secret, ProofRole role, const std::string& server_address,
            const Nonce& requester_nonce, const Nonce& server_nonce) {
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

// In constant time.
bool proof_matches(const Proof& expected, const uint8_t* received) {
  return CRYPTO_memcmp(expected.data(), received, expected.size()) == 0;
}

// What a requester's endpoint fails with when the owner's UCX refuses the connection (which one
// depends on which side's UCX noticed first).
bool closed_by_owner(ucs_status_t status) {
  return status == UCS_ERR_NOT_CONNECTED || status == UCS_ERR_ENDPOINT_TIMEOUT ||
         status == UCS_ERR_CONNECTION_RESET;
}

}  // namespace

void UcxJobGate::prove_to(const std::shared_ptr<UcxPeer>& peer, Deadline deadline) {
  if (peer->proven()) return;
  auto pending = std::make_shared<Pending>();
  pending->peer = peer;
  pending->nonce = random_nonce();
  const auto registration = pending_.add(pending);
  msg::Hello hello{registration.id(), {}};
  std::memcpy(hello.nonce, pending->nonce.data(), pending->nonce.size());
  peer->send(msg::kHello, msg::encode(hello));
  peer->await(pending_, *pending, deadline, "proving the job secret to " + peer->address());
  auto lock = pending_.lock();
  if (!pending->answered) {
    std::string hint;
    if (!pending->challenged && closed_by_owner(peer->failure())) {
      // The owner's UCX closes a connection whose endpoint error handling differs from its own
      // without saying why; its log names the cause ("refused a peer's connection").
      hint =
          " before the job proof began: if the owner runs, its UCX_TLS may differ from this "
          "process's (" +
          worker_.endpoint_setting() +
          "), and UCX refuses such a connection; every process of a job must use the same UCX_TLS";
    }
    raise(Status::kCommunication,
          ucx_error("transfer with " + peer->address() + " failed", peer->failure()) + hint);
  }
  if (!pending->refusal.empty()) {
    raise(Status::kCommunication, "transport endpoint " + peer->address() + ": " +
                                      pending->refusal + " (a rank of another job?)");
  }
  peer->mark_proven();
}

bool UcxJobGate::admitted(ucp_ep_h ep) {
  std::lock_guard<std::mutex> lock(mutex_);
  return admitted_.count(ep) != 0;
}

void UcxJobGate::forget(ucp_ep_h ep) {
  std::lock_guard<std::mutex> lock(mutex_);
  admitted_.erase(ep);
  challenged_.erase(challenged_.lower_bound({ep, 0}), challenged_.upper_bound({ep, UINT64_MAX}));
}

void UcxJobGate::take_hello(const void* data, size_t length, ucp_ep_h reply_ep) {
  auto hello = msg::decode<msg::Hello>(data, length);
  if (!hello || reply_ep == nullptr) return;
  Challenge challenge{nonce_of(hello->nonce), {}};
  msg::Challenge reply{hello->hello_id, {}, {}};
  try {
    challenge.owner = random_nonce();
    const Proof proof =
        prove(secret_, ProofRole::kServer, own_address_, challenge.requester, challenge.owner);
    std::memcpy(reply.proof, proof.data(), proof.size());
  } catch (const Error& error) {
    MEMLOOM_LOG(kError, "transport " << own_address_ << ": " << error.what());
    return;  // the requester times out
  }
  std::memcpy(reply.nonce, challenge.owner.data(), challenge.owner.size());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (challenged_.size() >= kMaxChallenges) challenged_.erase(challenged_.begin());
    challenged_[{reply_ep, hello->hello_id}] = challenge;
  }
  msg::send(reply_ep, msg::kChallenge, msg::encode(reply), /*reply=*/false);
}

void UcxJobGate::take_challenge(const void* data, size_t length, ucp_ep_h) {
  auto challenge = msg::decode<msg::Challenge>(data, length);
  if (!challenge) return;
  std::shared_ptr<Pending> pending = pending_.find(challenge->hello_id);
  if (!pending) return;  // the requester gave up meanwhile
  {
    auto lock = pending_.lock();
    pending->challenged = true;
  }
  const std::string& owner = pending->peer->address();
  const Nonce owner_nonce = nonce_of(challenge->nonce);
  std::string refusal;
  msg::HelloProof proof{challenge->hello_id, {}};
  try {
    if (!proof_matches(prove(secret_, ProofRole::kServer, owner, pending->nonce, owner_nonce),
                       challenge->proof)) {
      refusal = "it could not prove it knows the job secret (not a rank of this job)";
    } else {
      const Proof mine = prove(secret_, ProofRole::kRequester, owner, pending->nonce, owner_nonce);
      std::memcpy(proof.proof, mine.data(), mine.size());
    }
  } catch (const Error& error) {
    refusal = error.what();
  }
  if (refusal.empty()) {
    pending->peer->send(msg::kProof, msg::encode(proof));
    return;  // the verdict answers the call
  }
  auto lock = pending_.lock();
  pending->refusal = std::move(refusal);
  pending->answered = true;
}

void UcxJobGate::take_proof(const void* data, size_t length, ucp_ep_h reply_ep) {
  auto proof = msg::decode<msg::HelloProof>(data, length);
  if (!proof || reply_ep == nullptr) return;
  msg::Verdict verdict{proof->hello_id, static_cast<uint32_t>(Status::kCommunication), 0};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = challenged_.find({reply_ep, proof->hello_id});
    if (it != challenged_.end()) {
      const Challenge& challenge = it->second;
      try {
        if (proof_matches(prove(secret_, ProofRole::kRequester, own_address_, challenge.requester,
                                challenge.owner),
                          proof->proof)) {
          admitted_.insert(reply_ep);
          verdict.status = 0;
        }
      } catch (const Error& error) {
        MEMLOOM_LOG(kError, "transport " << own_address_ << ": " << error.what());
      }
      challenged_.erase(it);
    }
  }
  if (verdict.status != 0) {
    MEMLOOM_LOG(kDebug,
                "transport " << own_address_ << " refused an endpoint: no proof of the job secret");
  }
  msg::send(reply_ep, msg::kVerdict, msg::encode(verdict), /*reply=*/false);
}

void UcxJobGate::take_verdict(const void* data, size_t length, ucp_ep_h) {
  auto verdict = msg::decode<msg::Verdict>(data, length);
  if (!verdict) return;
  std::shared_ptr<Pending> pending = pending_.find(verdict->hello_id);
  if (!pending) return;
  auto lock = pending_.lock();
  if (verdict->status != 0) pending->refusal = "it refused this rank's proof of the job secret";
  pending->answered = true;
}

}  // namespace memloom::host
