// The secret the ranks of one MemFabric job share: the first BM object or TRANS instance stores a
// random one in the job's config store and every later one reads it back, so all agree. It is the
// HAL transport's job secret (hal::TransportOptions): transport endpoints serve, and hand remote
// keys to, only processes that prove they know it. Whoever can read the config store can join the
// job: the store's TLS protects it when on.
#pragma once

#include <string>

#include "hw/hal/transport.h"

namespace memloom::store {
class Client;
}

namespace memloom::smem {

// The store key of the job's secret.
std::string job_secret_key();

// The job's secret: created (CSPRNG) and stored with an atomic create-if-absent by the first
// caller, read by every later one. Throws what the store throws (kCommunication, kTimeout),
// kSystem when the CSPRNG fails, kCommunication when the stored value is malformed.
hal::JobSecret load_or_create_job_secret(store::Client& store);

}  // namespace memloom::smem
