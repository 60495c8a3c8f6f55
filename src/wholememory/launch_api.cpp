// memloom/launch.h: the launcher's rank layout for programs, and the WholeMemory unique id shared
// through the job's config store (rank 0 creates and publishes it, the others wait for it).
#include "memloom/launch.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "memloom/error.h"
#include "src/base/api_guard.h"
#include "src/base/environment.h"
#include "src/base/launcher_detection.h"
#include "src/base/log.h"
#include "src/base/wait_reporter.h"
#include "src/store/client.h"
#include "src/wholememory/communicator.h"
#include "src/wholememory/runtime.h"
#include "src/wholememory/unique_id.h"
#include "src/wholememory/wholememory_error.h"

using memloom::raise;
using memloom::Status;
namespace base = memloom::base;
namespace store = memloom::store;
namespace wm = memloom::wholememory;

namespace {

template <size_t N>
void copy_text(char (&to)[N], const std::string& from) {
  std::snprintf(to, N, "%s", from.c_str());
}

// Waits for `key` in slices, so a long wait reports what it waits for.
std::optional<std::string> wait_for_key(store::Client& client, const std::string& key,
                                        memloom::Deadline deadline,
                                        const std::function<std::string()>& what) {
  base::WaitReporter reporter(deadline);
  while (true) {
    auto value = client.get(
        key, std::min(deadline.remaining(),
                      std::max(reporter.next_report_in(), std::chrono::milliseconds(1))));
    if (value || deadline.expired()) return value;
    reporter.poll(what);
  }
}

void share_unique_id(wholememory_unique_id_t* unique_id, int rank, int world_size) {
  auto& runtime = wm::Runtime::instance();
  runtime.require_initialized();
  wm::checked_output(unique_id, "unique_id");
  MEMLOOM_CHECK_ARG(world_size > 0,
                    "world_size must be positive, got " + std::to_string(world_size));
  MEMLOOM_CHECK_ARG(
      rank >= 0 && rank < world_size,
      "rank " + std::to_string(rank) + " is out of range [0, " + std::to_string(world_size) + ")");
  const base::LaunchInfo launch = base::detect_launch_logged();
  if (launch.store_url.empty()) {
    raise(Status::kInvalidValue,
          "no config store to share the unique id through (" + launch.describe() +
              "): set MEMLOOM_STORE_URL, or MASTER_ADDR and MASTER_PORT, the same on every rank");
  }
  // Every rank calls this the same number of times, so the n-th call of each meets the others'.
  static std::atomic<int> sequence{0};
  const std::string base_key = "memloom/unique_id/" + std::to_string(sequence++) + "/";
  const std::string key = base_key + "id", readers_key = base_key + "readers",
                    done_key = base_key + "done", read_key = base_key + "read/";
  const memloom::Deadline deadline = wm::collective_deadline();

  if (rank == 0) {
    const auto id = wm::UniqueId::generate(runtime.store_url_for_new_id());
    *unique_id = wm::encode_unique_id(id);
  }
  store::ClientOptions options;
  options.connect_timeout = deadline.remaining();
  auto client = store::Client::connect(launch.store_url, options);
  if (rank != 0) {
    auto value = wait_for_key(*client, key, deadline, [&] {
      return "rank 0 to publish the WholeMemory unique id at " + launch.store_url;
    });
    if (!value || value->size() != sizeof(unique_id->internal)) {
      raise(Status::kTimeout, "rank " + std::to_string(rank) +
                                  ": rank 0 did not publish the WholeMemory unique id at " +
                                  launch.store_url + " in time");
    }
    std::memcpy(unique_id->internal, value->data(), sizeof(unique_id->internal));
    client->set(read_key + std::to_string(rank), "1");
    if (client->add(readers_key, 1) == world_size - 1) client->set(done_key, "1");
    return;
  }
  client->set(key, std::string(unique_id->internal, sizeof(unique_id->internal)));
  if (world_size == 1) {
    client->remove_prefix(base_key);
    return;
  }
  // Held until every rank read it, then removed: a store that outlives the job keeps no stale id
  // for the next one.
  auto done = wait_for_key(*client, done_key, deadline, [&] {
    std::vector<int> missing;
    for (int r = 1; r < world_size; ++r) {
      if (!client->get(read_key + std::to_string(r), std::chrono::milliseconds(0))) {
        missing.push_back(r);
      }
    }
    return "ranks " + base::rank_list(missing) + " of " + std::to_string(world_size) +
           " to read the WholeMemory unique id at " + launch.store_url;
  });
  client->remove_prefix(base_key);
  if (!done) {
    raise(Status::kTimeout, "rank 0: not every rank read the WholeMemory unique id from " +
                                launch.store_url + " in time");
  }
}

}  // namespace

extern "C" {

memloom_status_t memloom_get_launch_info(memloom_launch_info_t* info) {
  if (info == nullptr) {
    base::report_api_failure("memloom_get_launch_info", Status::kInvalidInput, "info is null");
    return MEMLOOM_STATUS_INVALID_INPUT;
  }
  std::memset(info, 0, sizeof(*info));
  info->rank = info->world_size = info->local_rank = info->local_world_size = -1;
  base::LaunchInfo launch;
  int device_variable = -1;
  try {
    launch = base::detect_launch_logged();
    device_variable = base::Environment::read().device;
  } catch (const memloom::Error& error) {
    base::report_api_failure("memloom_get_launch_info", error.status(), error.what());
    return static_cast<memloom_status_t>(error.status());
  }
  info->rank = launch.rank;
  info->world_size = launch.world_size;
  info->local_rank = launch.local_rank;
  info->local_world_size = launch.local_world_size;
  info->rank0_serves_store = launch.rank0_serves_store ? 1 : 0;
  copy_text(info->launcher, launch.launcher);
  copy_text(info->rank_variable, launch.rank_variable);
  copy_text(info->store_url, launch.store_url);
  copy_text(info->store_source, launch.store_source);
  info->device = device_variable >= 0 ? device_variable : std::max(launch.local_rank, 0);
  return launch.found() ? MEMLOOM_STATUS_SUCCESS : MEMLOOM_STATUS_NOT_FOUND;
}

wholememory_error_code_t memloom_wholememory_share_unique_id(wholememory_unique_id_t* unique_id,
                                                             int rank, int world_size) {
  return wm::guarded("memloom_wholememory_share_unique_id",
                     [&] { share_unique_id(unique_id, rank, world_size); });
}

}  // extern "C"
