// The key that proves a client belongs to a job: HMAC-SHA256 of the job namespace under the job's
// secret (MEMLOOM_JOB_SECRET). The secret itself never travels, so a server (or anything between
// client and server) that sees the key learns neither the secret nor the key of another namespace.
#pragma once

#include <string>
#include <string_view>

namespace memloom::store {

// 32 bytes; "" when the secret is empty (the client then names its namespace without a key).
std::string namespace_key(std::string_view job_secret, std::string_view job_namespace);

}  // namespace memloom::store
