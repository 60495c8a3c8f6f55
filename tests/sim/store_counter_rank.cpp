// A rank program for the launcher tests: proves that the MEMLOOM_STORE_URL a rank receives
// answers a store::Client. Every rank publishes a key and increments a job counter; rank 0 waits
// until the counter reaches the world size and reads every rank's key back.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "memloom/deadline.h"
#include "memloom/error.h"
#include "src/store/client.h"

namespace {

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

int run() {
  const std::string url = env_or_empty("MEMLOOM_STORE_URL");
  const std::string job = env_or_empty("MEMLOOM_JOB_ID");
  const std::string rank_text = env_or_empty("MEMLOOM_RANK");
  const std::string world_text = env_or_empty("MEMLOOM_WORLD_SIZE");
  if (url.empty() || job.empty() || rank_text.empty() || world_text.empty()) {
    std::fprintf(stderr, "the launcher did not set the MEMLOOM_* variables\n");
    return 10;
  }
  const int rank = std::stoi(rank_text);
  const int world = std::stoi(world_text);

  memloom::store::ClientOptions options;
  options.connect_timeout = std::chrono::seconds(10);
  options.rank = rank;
  options.group = job;
  auto client = memloom::store::Client::connect(url, options);
  const memloom::store::KeyPrefix keys(job + "/");
  client->set(keys("rank/" + rank_text), "hello from " + rank_text);
  client->add(keys("counter"), 1);
  std::printf("store=%s\n", url.c_str());

  if (rank == 0) {
    const auto deadline = memloom::Deadline::after(std::chrono::seconds(10));
    int64_t count = 0;
    while ((count = client->add(keys("counter"), 0)) < world) {
      if (deadline.expired()) {
        std::fprintf(stderr, "the counter stayed at %lld of %d\n", static_cast<long long>(count),
                     world);
        return 11;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    for (int peer = 0; peer < world; ++peer) {
      auto value = client->get(keys("rank/" + std::to_string(peer)), std::chrono::seconds(5));
      if (!value || *value != "hello from " + std::to_string(peer)) {
        std::fprintf(stderr, "rank %d's key is missing or wrong\n", peer);
        return 12;
      }
    }
    std::printf("counter reached %lld\n", static_cast<long long>(count));
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const memloom::Error& error) {
    std::fprintf(stderr, "store error (%s): %s\n", memloom::status_name(error.status()),
                 error.what());
    return 13;
  }
}
