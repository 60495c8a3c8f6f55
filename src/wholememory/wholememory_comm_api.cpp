// The WholeMemory C API, part 1: library lifetime, unique ids and communicators. Every entry point
// runs through guarded() (wholememory_error.h); handles are validated against the Runtime registry.
#include <cstdlib>
#include <mutex>
#include <optional>

#include "memloom/error.h"
#include "src/base/launcher_detection.h"
#include "src/base/log.h"
#include "src/core/group.h"
#include "src/core/platform_loader.h"
#include "src/store/call_deadline.h"
#include "src/wholememory/collective_check.h"
#include "src/wholememory/device_count.h"
#include "src/wholememory/enum_arguments.h"
#include "src/wholememory/runtime.h"
#include "src/wholememory/unique_id.h"
#include "src/wholememory/wholememory_error.h"
#include "wholememory/wholememory.h"

using memloom::raise;
using memloom::Status;
namespace wm = memloom::wholememory;

namespace {

memloom::log::Level to_log_level(LogLevel level) {
  switch (level) {
    case LEVEL_FATAL:
      return memloom::log::Level::kFatal;
    case LEVEL_ERROR:
      return memloom::log::Level::kError;
    case LEVEL_WARN:
      return memloom::log::Level::kWarn;
    case LEVEL_INFO:
      return memloom::log::Level::kInfo;
    case LEVEL_DEBUG:
      return memloom::log::Level::kDebug;
    case LEVEL_TRACE:
      return memloom::log::Level::kTrace;
  }
  raise(Status::kInvalidInput,
        "log level " + std::to_string(static_cast<int>(level)) + " is not a LogLevel");
}

// Ranks given different unique ids never meet. They can still see each other where a launcher
// names the job (their store clients share its namespace; without one, each unique id is its own
// namespace) and the communicator spans the job's world, so that each rank of the job holds one
// communicator rank and a slot per rank tells them apart.
std::optional<memloom::core::GroupIdentity> unique_id_identity(const wm::UniqueId& id, int size) {
  if (memloom::store::default_job_namespace().empty()) return std::nullopt;
  try {
    if (memloom::base::detect_launch().world_size != size) return std::nullopt;
  } catch (const memloom::Error&) {
    return std::nullopt;  // launcher variables that do not parse are reported where they are used
  }
  return memloom::core::GroupIdentity{memloom::store::KeyPrefix("wm-meeting/"), "unique id",
                                      id.token_hex()};
}

}  // namespace

extern "C" {

wholememory_error_code_t wholememory_init(unsigned int flags, LogLevel log_level) {
  return wm::guarded("wholememory_init", [&] {
    if (flags != 0)
      raise(Status::kInvalidValue,
            "flags are reserved and must be 0, got " + std::to_string(flags));
    const auto level =
        to_log_level(wm::checked_enum(log_level, LEVEL_FATAL, LEVEL_TRACE, "LogLevel"));
    // MEMLOOM_LOG_LEVEL wins so a user can turn on debugging without recompiling.
    if (std::getenv("MEMLOOM_LOG_LEVEL") == nullptr) memloom::log::set_level(level);
    memloom::base::log_launch_once();
    wm::Runtime::instance().initialize();
  });
}

wholememory_error_code_t wholememory_finalize(void) {
  return wm::guarded("wholememory_finalize", [] { wm::Runtime::instance().finalize(); });
}

wholememory_error_code_t wholememory_set_rmm_enabled(bool enabled) {
  return wm::guarded("wholememory_set_rmm_enabled", [&] {
    if (enabled) raise(Status::kNotSupported, "RMM allocations are not part of memloom");
  });
}

bool wholememory_is_rmm_enabled(void) {
  return false;
}

wholememory_error_code_t wholememory_create_unique_id(wholememory_unique_id_t* unique_id) {
  return wm::guarded("wholememory_create_unique_id", [&] {
    wm::Runtime::instance().require_initialized();
    wm::checked_output(unique_id, "unique_id");
    const auto id = wm::UniqueId::generate(wm::Runtime::instance().store_url_for_new_id());
    *unique_id = wm::encode_unique_id(id);
  });
}

wholememory_error_code_t wholememory_create_communicator(wholememory_comm_t* comm,
                                                         wholememory_unique_id_t unique_id,
                                                         int rank, int size) {
  return wm::guarded("wholememory_create_communicator", [&] {
    // From the call's start: MEMLOOM_TIMEOUT_S bounds the whole call, the backend's start
    // included.
    const memloom::Deadline deadline = wm::collective_deadline();
    auto& runtime = wm::Runtime::instance();
    runtime.require_initialized();
    wm::checked_output(comm, "comm");
    *comm = nullptr;
    MEMLOOM_CHECK_ARG(size > 0, "communicator size must be positive, got " + std::to_string(size));
    MEMLOOM_CHECK_ARG(
        rank >= 0 && rank < size,
        "rank " + std::to_string(rank) + " is out of range [0, " + std::to_string(size) + ")");
    const auto id = wm::decode_unique_id(unique_id);
    const memloom::store::CallDeadlineScope store_calls(deadline);
    auto client = runtime.store_client(id.store_url, id.token_hex());
    auto group = memloom::core::Group::create(
        client, memloom::store::KeyPrefix("wm/" + id.token_hex() + "/"), rank, size, deadline,
        memloom::core::GroupTraffic::kData, unique_id_identity(id, size), [] {
          // As upstream, the communicator works on the device the calling thread chose (unless a
          // variable fixed the device). This starts the backend: only once the ranks met, so
          // that ranks given different unique ids see each other's records in time.
          memloom::core::platform().follow_caller_device();
        });
    *comm = runtime.add_comm(std::make_shared<wm::Communicator>(std::move(group)));
  });
}

wholememory_error_code_t wholememory_split_communicator(wholememory_comm_t* new_comm,
                                                        wholememory_comm_t comm, int color,
                                                        int key) {
  return wm::guarded("wholememory_split_communicator", [&] {
    auto& runtime = wm::Runtime::instance();
    auto parent = runtime.comm(comm);
    if (new_comm != nullptr) *new_comm = nullptr;
    std::shared_ptr<wm::Communicator> child;
    {
      std::lock_guard<std::mutex> lock(parent->collective_mutex());
      // Take part even with a null output so the other ranks are not left waiting.
      child = parent->split(color, key, wm::collective_deadline());
    }
    wm::checked_output(new_comm, "new_comm");
    if (child) *new_comm = runtime.add_comm(std::move(child));
  });
}

wholememory_error_code_t wholememory_destroy_communicator(wholememory_comm_t comm) {
  return wm::guarded("wholememory_destroy_communicator", [&] {
    auto& runtime = wm::Runtime::instance();
    auto target = runtime.comm(comm);
    if (target->owned_by_allocation()) {
      raise(Status::kInvalidInput,
            "this communicator belongs to a HIERARCHY allocation; it goes "
            "away with wholememory_free");
    }
    std::lock_guard<std::mutex> lock(target->collective_mutex());
    const auto local = wm::capture_failure([&] {
      const int live = target->live_allocations().load();
      if (live > 0) {
        raise(Status::kInvalidInput, std::to_string(live) +
                                         " allocation(s) of this communicator are still alive; "
                                         "wholememory_free them first");
      }
    });
    wm::agree_on_arguments(target->group(), "wholememory_destroy_communicator", "", local,
                           wm::collective_deadline());
    runtime.remove_comm(comm);
  });
}

wholememory_error_code_t wholememory_communicator_support_type_location(
    wholememory_comm_t comm, wholememory_memory_type_t memory_type,
    wholememory_memory_location_t memory_location) {
  // "Not supported" is an answer here, not a failure: it is returned without being logged.
  bool supported = false;
  const auto code = wm::guarded("wholememory_communicator_support_type_location", [&] {
    auto target = wm::Runtime::instance().comm(comm);
    supported =
        target->supports(wm::checked_enum(memory_type, WHOLEMEMORY_MT_NONE,
                                          WHOLEMEMORY_MT_HIERARCHY, "wholememory_memory_type_t"),
                         wm::checked_enum(memory_location, WHOLEMEMORY_ML_NONE, WHOLEMEMORY_ML_HOST,
                                          "wholememory_memory_location_t"));
  });
  if (code != WHOLEMEMORY_SUCCESS) return code;
  return supported ? WHOLEMEMORY_SUCCESS : WHOLEMEMORY_NOT_SUPPORTED;
}

wholememory_error_code_t wholememory_communicator_get_rank(int* rank, wholememory_comm_t comm) {
  return wm::guarded("wholememory_communicator_get_rank", [&] {
    auto target = wm::Runtime::instance().comm(comm);
    *wm::checked_output(rank, "rank") = target->rank();
  });
}

wholememory_error_code_t wholememory_communicator_get_size(int* size, wholememory_comm_t comm) {
  return wm::guarded("wholememory_communicator_get_size", [&] {
    auto target = wm::Runtime::instance().comm(comm);
    *wm::checked_output(size, "size") = target->size();
  });
}

wholememory_error_code_t wholememory_communicator_get_local_size(int* local_size,
                                                                 wholememory_comm_t comm) {
  return wm::guarded("wholememory_communicator_get_local_size", [&] {
    auto target = wm::Runtime::instance().comm(comm);
    *wm::checked_output(local_size, "local_size") = target->local_size();
  });
}

wholememory_error_code_t wholememory_communicator_get_clique_info(clique_info_t* clique_info,
                                                                  wholememory_comm_t comm) {
  return wm::guarded("wholememory_communicator_get_clique_info", [&] {
    auto target = wm::Runtime::instance().comm(comm);
    *wm::checked_output(clique_info, "clique_info") = target->clique_info();
  });
}

bool wholememory_communicator_is_bind_to_nvshmem(wholememory_comm_t comm) {
  return wm::guarded_value("wholememory_communicator_is_bind_to_nvshmem", false, [&] {
    wm::Runtime::instance().comm(comm);
    return false;  // memloom is not built with NVSHMEM
  });
}

wholememory_error_code_t wholememory_communicator_set_distributed_backend(
    wholememory_comm_t comm, wholememory_distributed_backend_t distributed_backend) {
  return wm::guarded("wholememory_communicator_set_distributed_backend", [&] {
    auto target = wm::Runtime::instance().comm(comm);
    target->set_distributed_backend(wm::checked_enum(distributed_backend, WHOLEMEMORY_DB_NONE,
                                                     WHOLEMEMORY_DB_NVSHMEM,
                                                     "wholememory_distributed_backend_t"));
  });
}

wholememory_distributed_backend_t wholememory_communicator_get_distributed_backend(
    wholememory_comm_t comm) {
  return wm::guarded_value(
      "wholememory_communicator_get_distributed_backend", WHOLEMEMORY_DB_NONE,
      [&] { return wm::Runtime::instance().comm(comm)->distributed_backend(); });
}

wholememory_error_code_t wholememory_communicator_barrier(wholememory_comm_t comm) {
  return wm::guarded("wholememory_communicator_barrier", [&] {
    auto target = wm::Runtime::instance().comm(comm);
    std::lock_guard<std::mutex> lock(target->collective_mutex());
    target->barrier(wm::collective_deadline());
  });
}

bool wholememory_is_intranode_communicator(wholememory_comm_t comm) {
  return wm::guarded_value("wholememory_is_intranode_communicator", false,
                           [&] { return wm::Runtime::instance().comm(comm)->intranode(); });
}

bool wholememory_is_intra_mnnvl_communicator(wholememory_comm_t comm) {
  // A clique is a node in memloom, so "one clique" and "one node" coincide.
  return wm::guarded_value("wholememory_is_intra_mnnvl_communicator", false, [&] {
    return wm::Runtime::instance().comm(comm)->clique_info().clique_num == 1;
  });
}

bool wholememory_is_build_with_nvshmem(void) {
  return false;
}

int fork_get_device_count(void) {
  return wm::guarded_value("fork_get_device_count", -1,
                           [] { return wm::device_count_in_child(std::chrono::seconds(60)); });
}

}  // extern "C"
