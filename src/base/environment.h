// What the process learns from its environment: rank layout set by a launcher, node identity,
// backend choice. Read once; later changes of the environment are not seen.
#pragma once

#include <string>

namespace memloom::base {

struct Environment {
  int rank = -1;          // MEMLOOM_RANK
  int world_size = -1;    // MEMLOOM_WORLD_SIZE
  int local_rank = -1;    // MEMLOOM_LOCAL_RANK
  int device = -1;        // MEMLOOM_DEVICE
  std::string node;       // MEMLOOM_NODE, else host_identity()
  std::string store_url;  // MEMLOOM_STORE_URL
  std::string job_id;     // MEMLOOM_JOB_ID
  std::string backend;    // MEMLOOM_BACKEND: "emulated", "cuda" or "" (choose)

  static Environment read();
};

// hostname + kernel boot id: two processes share memory only if they run on the same booted host.
std::string host_identity();

// Parses "123", "64K", "16M", "2G" (binary units). Throws kInvalidValue on garbage.
size_t parse_byte_size(const std::string& text);

}  // namespace memloom::base
