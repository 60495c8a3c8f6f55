#include "src/base/environment.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "memloom/error.h"

namespace memloom::base {
namespace {

std::string env_string(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

int env_int(const char* name, int fallback) {
  std::string value = env_string(name);
  if (value.empty()) return fallback;
  try {
    return std::stoi(value);
  } catch (const std::exception&) {
    raise(Status::kInvalidValue, std::string(name) + "='" + value + "' is not an integer");
  }
}

}  // namespace

Environment Environment::read() {
  Environment env;
  env.rank = env_int("MEMLOOM_RANK", -1);
  env.world_size = env_int("MEMLOOM_WORLD_SIZE", -1);
  env.local_rank = env_int("MEMLOOM_LOCAL_RANK", -1);
  env.device = env_int("MEMLOOM_DEVICE", -1);
  env.node = env_string("MEMLOOM_NODE");
  if (env.node.empty()) env.node = host_identity();
  env.store_url = env_string("MEMLOOM_STORE_URL");
  env.job_id = env_string("MEMLOOM_JOB_ID");
  env.backend = env_string("MEMLOOM_BACKEND");
  return env;
}

std::string host_identity() {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  std::string boot_id;
  std::ifstream file("/proc/sys/kernel/random/boot_id");
  std::getline(file, boot_id);
  return std::string(host) + ":" + boot_id;
}

size_t parse_byte_size(const std::string& text) {
  if (text.empty()) raise(Status::kInvalidValue, "empty byte size");
  size_t pos = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &pos);
  } catch (const std::exception&) {
    raise(Status::kInvalidValue, "'" + text + "' is not a byte size");
  }
  std::string suffix = text.substr(pos);
  int shift = 0;
  if (suffix.empty() || suffix == "B")
    shift = 0;
  else if (suffix == "K" || suffix == "KiB" || suffix == "k")
    shift = 10;
  else if (suffix == "M" || suffix == "MiB")
    shift = 20;
  else if (suffix == "G" || suffix == "GiB")
    shift = 30;
  else if (suffix == "T" || suffix == "TiB")
    shift = 40;
  else
    raise(Status::kInvalidValue, "'" + text + "' has an unknown unit (use K, M, G or T)");
  if (shift > 0 && value > (~0ull >> shift))
    raise(Status::kInvalidValue, "'" + text + "' is too large");
  return static_cast<size_t>(value << shift);
}

}  // namespace memloom::base
